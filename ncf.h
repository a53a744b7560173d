/* ncf.h - v0.8.0 - Neural Collaborative Filtering (NeuMF) in one C header.

   He et al., "Neural Collaborative Filtering", WWW 2017, as TensorFlow's
   official NCF (the MLPerf reference) trains and evaluates it: MovieLens,
   leave-one-out split, 4 fresh negatives per positive every epoch, HR@10 and
   NDCG@10 over sampled candidates, Adam.

   USAGE
     In exactly ONE C or C++ file:
        #define NCF_IMPLEMENTATION
        #include "ncf.h"
     Everywhere else just #include "ncf.h". Needs only the C library and libm;
     OpenMP (-fopenmp) is optional:   cc -O2 -fopenmp app.c -lm

   CONTENTS (each part's banner holds its tag: grep -n '>>serve' ncf.h)
     This file is generated: the public API from src/api.h, each implementation stage
     from the file src/TAG.c (or .h) its banner names, in this order, nothing rewritten.
     public API       >>api-config  >>api-errors  >>api-data  >>api-sampler  >>api-model
                      >>api-serving  >>api-features  >>api-model-file  >>api-training  >>api-mpi
     implementation   >>impl
       >>internal     includes, platform macros, the few calls shared ahead of their stage
       >>base         >>threads  >>errors  >>memory  >>sort  >>rng
       >>ids          id tables as written
       >>logs         >>data  delimited logs  >>files
       >>dataset      >>split: filters, hold-outs, validation, negatives, synthetic data
       >>sampler      negatives by rank, the epoch as a keyed permutation
       >>kernels      the GEMM tile and its plain-C reference
       >>model        config, parameter layout, create, free, average  >>forward
       >>score        a user against many items: the item projection, its cache, lanes
       >>train        >>training-step  >>optimizer  >>train-loop (and ncf_fit)
       >>als          MF by alternating least squares, and its exact fold-in's Gram matrices
       >>eval         ranking, HR, NDCG, MRR, RecBole's metrics, popularity
       >>tune         successive halving over settings, chosen on validation
       >>serve        >>model-ids  >>serving  >>serving-options  >>similar  >>by-id
       >>fold         >>fold-in  >>growth
       >>features     side features  >>features-read  >>features-model  >>features-save
       >>file         >>model-file  >>safe-save
       >>mpi          opt-in (NCF_MPI): shards, gradient folds over ranks
     >>licence

   COMPILE-TIME OPTIONS (define before the #include that has NCF_IMPLEMENTATION)
     NCF_STATIC                         all API functions static to that file
     NCF_MALLOC, NCF_REALLOC, NCF_FREE  your allocator (all three or none)
     NCF_ASSERT(x)                      internal invariants (default assert())
     NCF_NO_STDIO                       no FILE* functions (no file loaders)
     NCF_INFERENCE_ONLY                 for devices: model files, predict and recommend
                                        only; no optimizer, sampler, loaders, evaluation
                                        or ncf_model_create, no gradient or Adam memory,
                                        no double-precision math, no assert (docs/devices.md
                                        has its code size on a Cortex-M, make device)
     NCF_MAX_LAYERS                     MLP tower depth limit (default 8)
     NCF_VECTOR_EXT, NCF_NO_VECTOR_EXT  the kernels' vector tile on or off (default: on where
                                        the target has SIMD registers: x86, NEON, wasm SIMD, POWER, z;
                                        the plain tile, the same bits, elsewhere)
     NCF_NO_TLS                         no thread-local storage (the default on bare metal:
                                        Cortex-M, RISC-V microcontrollers, any ELF target
                                        without an OS): the error text is then shared by
                                        all threads
     NCF_MPI                            data-parallel training over MPI ranks (ncf_mpi_*;
                                        build with mpicc); nothing of MPI without it
     NCF_MPI_GROUPS                     groups of users under MPI (default 16): the most
                                        ranks, and the grouping of every gradient sum

   EXAMPLE (make test compiles it)
     ncf_dataset data;
     ncf_model *model = NULL;
     ncf_sampler sampler;
     ncf_metrics m;
     ncf_config cfg = ncf_config_default();          // the paper's NeuMF
     ncf_rec_opts opts = ncf_rec_opts_default();     // the 10 best, rated items skipped
     int64_t top[10];
     float score[10];
     int epoch, n, k;
     if (ncf_load_dataset(&data, "ml-1m/ratings.dat", NULL) != NCF_OK) {
         fprintf(stderr, "%s\n", ncf_error_text()); return 1;
     }
     cfg.num_users = data.num_users; cfg.num_items = data.num_items;
     if (ncf_model_create(&model, &cfg) != NCF_OK || ncf_model_set_ids(model, &data) != NCF_OK ||
         ncf_sampler_init(&sampler, &data, cfg.num_neg, cfg.seed) != NCF_OK) goto fail;
     for (epoch = 1; epoch <= 20; epoch++) {
         if (ncf_train_epoch(model, &sampler, epoch, NULL, NULL, NULL) != NCF_OK ||
             ncf_evaluate(model, &data, NULL, &m) != NCF_OK) goto fail; // test HR@10, NDCG@10
         printf("Iteration %d: HR = %.4f, NDCG = %.4f\n", epoch, m.hr, m.ndcg);
     }
     if (ncf_save(model, "neumf.ncf", NCF_SAVE_MODEL) != NCF_OK) goto fail;
     ncf_model_free(model); model = NULL;
     // serving, later or elsewhere: the 10 best movies user 1 has not rated
     if (ncf_load(&model, "neumf.ncf") != NCF_OK) goto fail;
     if ((n = ncf_recommend(model, 1, &opts, top, score)) < 0) goto fail;
     for (k = 0; k < n; k++) printf("movie %lld (%.3f)\n", (long long)top[k], score[k]);
     ncf_model_free(model); ncf_dataset_free(&data);
     return 0;
   fail:
     fprintf(stderr, "%s\n", ncf_error_text());
     ncf_model_free(model); ncf_dataset_free(&data);
     return 1;

   THREAD SAFETY
     Serving only reads a model: ncf_predict, ncf_predict_index, ncf_predict_for,
     ncf_recommend, ncf_recommend_index, ncf_recommend_users, ncf_similar, the by-id calls
     and ncf_fold_in (each thread with its own workspace, if any) may run on one model from
     any number of threads at once (each call has its own buffers; ids are found by binary
     search), and runs on the calling thread alone: no serving call starts an OpenMP team
     unless asked (ncf_rec_opts.threads; ncf_recommend_users, made for batches, uses the
     threads). Training, evaluating, loading ids or pre-training change the model: one thread
     at a time, and not while it serves. Distinct models and datasets may be used from
     distinct threads. The last error text is thread-local where the compiler supports it.
     Results are bit-identical for any number of OpenMP threads and without OpenMP.

   THREADS
     OpenMP threads (ncf_set_threads, or OMP_NUM_THREADS). Work is handed out in small
     units that any thread may take, and a thread with nothing left waits only for
     the units still running, spinning a moment (NCF__SPIN_US) before it naps. On a busy machine a
     thread that shares its core is slow and every phase waits for it, so training
     times itself every few seconds with thread 0 alone and with all threads and keeps
     the faster. Threads need an OpenMP compiler with GCC's atomics (GCC, Clang); any
     other runs on one thread.

   VERSIONS
     0.8.0 (this file): the API narrowed to 80 calls, one a job; CHANGELOG.md in the ncf.h
     repository has the table from 0.7's names and every version's changes.
*/
#ifndef NCF_H_INCLUDED
#define NCF_H_INCLUDED

#include <stddef.h>
#include <stdint.h>
#ifdef NCF_MPI
#include <mpi.h>
#endif

#define NCF_VERSION_MAJOR 0
#define NCF_VERSION_MINOR 8
#define NCF_VERSION_PATCH 0
#define NCF_VERSION_STRING "0.8.0"

#ifndef NCFDEF
#if defined(NCF_STATIC) && (defined(__GNUC__) || defined(__clang__))
#define NCFDEF static __attribute__((unused)) /* no warning for what a file does not call */
#elif defined(NCF_STATIC)
#define NCFDEF static
#else
#define NCFDEF extern
#endif
#endif

#ifndef NCF_MAX_LAYERS
#define NCF_MAX_LAYERS 8
#endif
#define NCF_MAX_ID_BYTES 256   /* the longest id (as written) a file may hold */
#define NCF_MAX_EVENT_KINDS 16 /* event kinds a load names (ncf_dataset_opts.events, ncf_load_report) */
#define NCF_MAX_EVENT_NAME 31  /* the longest event name, in bytes */
/* The largest epoch a model counts to (2^30): a model file past it is refused, and training
   numbers no epoch past it, so a program adding up to 2^30 epochs of its own to a loaded
   model's count stays within an int. */
#define NCF_MAX_EPOCH (1 << 30)
#define NCF_MAX_THREADS 1024 /* ncf_set_threads' most: each thread holds workspaces */
/* ncf_fold_opts_default: chosen on validation, NeuMF factors 8 on the paper's ml-1m split
   with a tenth of the users held out of training (docs/serving.md: Quality) */
#define NCF__FOLD_STEPS 40
#define NCF__FOLD_LR 0.01f
#define NCF__FOLD_L2 0.1f
#define NCF__FOLD_MOST_STEPS 100000 /* more steps than a fold-in ever needs; e.g. 2^31 would never return */
#define NCF__FOLD_MOST_NEG 1000     /* as training's num_neg (a step's examples stay within int64 and memory) */
#define NCF__ALS_MOST_DIM 4096      /* ALS keeps an mf_dim x mf_dim Gram matrix (128 MB of doubles at 4096) */

#ifdef __cplusplus
extern "C" {
#endif

/* ---- >>api-config: status codes, model types, the config ------------------------------------- */
/* Status codes: every fallible function returns one; ncf_error_text() says why. */
enum {
    NCF_OK = 0,
    NCF_ERR_ARG = -1,   /* a bad argument (NULL, zero size, id out of range) */
    NCF_ERR_NOMEM = -2, /* an allocation failed */
    NCF_ERR_IO = -3,    /* a file could not be opened, read or written */
    NCF_ERR_PARSE = -4, /* a malformed input line */
    NCF_ERR_DATA = -5   /* well-formed input that cannot be used (e.g. no negatives left) */
};

/* The two sides of the matrix: the calls that serve either take one (ncf_find, ncf_row,
   ncf_fold_in, ncf_similar, ncf_predict_for, ncf_model_add). */
enum { NCF_USER = 0, NCF_ITEM = 1 };

/* NeuMF: GMF and MLP towers fused by one output layer. GMF: w . (p_u * q_i) + b.
   MLP: a ReLU tower over [p_u; q_i]. MF: b + b_u + b_i + p_u . q_i (the dot-product
   baseline of Rendle et al. 2020; its biases share mf_reg with the embeddings). */
typedef enum { NCF_NEUMF = 0, NCF_GMF = 1, NCF_MLP = 2, NCF_MF = 3 } ncf_model_type;

/* dense: TF semantics, every embedding row's Adam moments decay every step.
   lazy:  only rows present in the batch are updated (TF LazyAdam); much faster. */
typedef enum { NCF_ADAM_LAZY = 0, NCF_ADAM_DENSE = 1 } ncf_adam_mode;

/* Adam, or plain SGD (p -= lr * grad; the paper's choice for fine-tuning a
   pre-trained NeuMF). The loss is a batch mean, so SGD wants a larger lr than Adam.
   ALS (MF only): no sampled negatives and no learning rate; each epoch fits the user rows,
   then the item rows, to the squared loss over every cell of the user-item matrix, a
   positive's target 1 and weight its confidence (1 unweighted), every other cell's target 0
   and weight `unobserved`, plus mf_reg times the squared rows (Hu, Koren and Volinsky's
   implicit ALS, as the implicit library and LIBMF's one-class MF fit it): a few conjugate
   gradient steps a row (exact when mf_dim <= 3). It leaves the MF biases at 0, so an
   ALS model's logit is p_u . q_i, the fitted preference, a score to rank by. Trains by
   ncf_train_epoch (and ncf_fit, ncf_train_epoch_each) only. */
typedef enum { NCF_OPT_ADAM = 0, NCF_OPT_SGD = 1, NCF_OPT_ALS = 2 } ncf_optimizer;

typedef struct ncf_config {
    int num_users, num_items;      /* table sizes (from the dataset) */
    ncf_model_type model;          /* NeuMF, GMF-only, MLP-only or MF */
    int mf_dim;                    /* GMF (or MF) embedding width */
    int num_layers;                /* entries used in layers[] (>= 2 for an MLP) */
    int layers[NCF_MAX_LAYERS];    /* layers[0] = user+item MLP embeddings, then dense widths */
    float mf_reg;                  /* L2 on GMF/MF embedding rows (and MF biases) used in a batch */
    float mlp_reg[NCF_MAX_LAYERS]; /* [0]: MLP embedding rows; [l]: dense layer l kernel */
    ncf_optimizer optimizer;
    float lr, beta1, beta2, epsilon;
    ncf_adam_mode adam;
    float init_sd;    /* embeddings start N(0, init_sd); 0.01 as the paper */
    int batch_size;   /* used by ncf_train_epoch */
    int num_neg;      /* negatives per positive in an epoch */
    uint64_t seed;    /* initialization and sampling */
    float unobserved; /* ALS: the weight of a cell without a positive, against a positive's
                         confidence (0.1, as LIBMF's one-class MF) */
} ncf_config;

/* The paper's (and TF ncf_main's) defaults: NeuMF, mf_dim 8, layers 64,32,16,8,
   no regularization, Adam lr 0.001 b1 0.9 b2 0.999 eps 1e-8, batch 256, 4 negatives. */
NCFDEF ncf_config ncf_config_default(void);
/* The MLPerf preset: mf_dim 64, layers 256,256,128,64, batch 2048, lr 0.0005. */
NCFDEF ncf_config ncf_config_mlperf(void);

/* ---- >>api-errors: the last error, the version, threads -------------------------------------- */
NCFDEF const char *ncf_error_text(void); /* message of the last failure */
NCFDEF const char *ncf_version(void);    /* NCF_VERSION_STRING */
/* OpenMP threads the library's parallel work uses, n > 0 (n <= 0 leaves them as they are; more
   than NCF_MAX_THREADS or the runtime's thread limit is that limit); returns the number in
   effect (1 without OpenMP). */
NCFDEF int ncf_set_threads(int n);

#ifndef NCF_INFERENCE_ONLY /* NCF_INFERENCE_ONLY: models, predict, recommend, save/load only */
/* ---- >>api-data: loading interaction logs, the split, ids ------------------------------------ */
/* What a load read and dropped (ncf_dataset.report): enough to print one line of each. */
typedef struct ncf_load_report {
    char sep[4];                /* the field separator: "::", "\t", ",", ";", "|", or " " (runs of blanks) */
    int header;                 /* 1: the first line named the columns */
    char columns[6][40];        /* user, item, rating, timestamp, strength, event: the header's name,
                                   "column N", or "" (absent; strength: no weighting) */
    int holdout;                /* the NCF_HOLDOUT_* applied */
    int text_ids[2];            /* users, items: 1 when kept as text (some id is not a plain integer) */
    int64_t interactions;       /* lines read */
    int users_read, items_read; /* distinct ids in the file */
    int64_t below_min_rating;   /* interactions rated below min_rating (not positives) */
    int users_below_min_rating, items_below_min_rating; /* ids left with no positive by it or the events */
    int64_t few_ratings;                                /* positives of the users under min_ratings */
    int users_few_ratings, items_few_ratings;           /* the users dropped; the items only dropped users rated */
    int64_t duplicates;                                 /* repeated (user, item) positives merged into one */
    int64_t few_item_ratings;                           /* positives of the items under min_item_ratings */
    int items_few_item_ratings;                         /* the items dropped by it */
    int users_filtered_out;        /* users left under min_ratings (kcore), or with no positive, by the item filter */
    int users_every_item;          /* users dropped for rating every item kept (nothing to rank or draw) */
    int filter_rounds;             /* rounds of the filters (kcore: until neither drops anything) */
    double weight_min, weight_max; /* the positives' confidences (ncf_dataset_opts.weighting); 0, 0 without */
    /* a split of many items per user (NCF_HOLDOUT_RATIO, _TIME, _CUTOFF): */
    int64_t test_interactions, validation_interactions; /* positives held out for each */
    int users_only_held_out;           /* users with held-out positives and none to train on: not evaluated */
    int64_t only_held_out;             /* their held-out positives, left out of the test and validation sets */
    int items_only_held_out;           /* items with held-out positives and none in training (kept, untrained) */
    int64_t cutoff, validation_cutoff; /* a time split: the first timestamp held out for each */
    int64_t blank_edged_ids[2];        /* user, item text id fields with a blank at either end outside quotes:
                                   kept (or dropped with trim_ids) */
    int64_t nonpositive_ratings;       /* lines rated 0 or below and kept as positives (no min_rating): in
                                          many logs such a rating means "not liked" or "not rated" */
    /* The event column's kinds in the order first read (view, addtocart, ...), the lines of each,
       and whether ncf_dataset_opts.events kept them; kinds past NCF_MAX_EVENT_KINDS count in
       other_event_lines. */
    int event_kinds;
    struct {
        char name[NCF_MAX_EVENT_NAME + 1];
        int64_t lines;
        int kept;        /* 1: listed in opts.events (or no list: every kind is kept) */
        double strength; /* its strength by opts.events; 0 without a list */
    } events[NCF_MAX_EVENT_KINDS];
    int64_t other_event_lines;
    int64_t events_dropped; /* lines of kinds opts.events does not list: not positives */
} ncf_load_report;

/* Implicit feedback after the hold-out split. Ids are dense 0-based indices: index k of users
   is the k-th user id in ascending order (integers by value, text by bytes), so an id is
   found by bisection (ncf_dataset_find) and an index named (ncf_dataset_id).
   Owns all its arrays; release with ncf_dataset_free. */
typedef struct ncf_dataset {
    int num_users, num_items;
    int64_t num_train;    /* training positives */
    int64_t *user_ptr;    /* [num_users+1] CSR offsets into items[] */
    int32_t *items;       /* [num_train] ascending within each user */
    int32_t *train_user;  /* [num_train] the user of each positive */
    float *weight;        /* [num_train] each positive's confidence, 1 + alpha f(strength), the
                               weight of its loss term (ncf_dataset_opts.weighting); NULL: all 1 */
    int32_t *test_item;   /* [num_users] held-out item, -1 when the user has none */
    int num_eval_neg;     /* eval candidates per user besides the test item */
    int32_t *eval_neg;    /* [num_users*num_eval_neg], rows of test users valid */
    int64_t *raw_user;    /* [num_users] integer ids, ascending; NULL when the ids are text */
    int64_t *raw_item;    /* [num_items] */
    int32_t *recent_item; /* [num_users] latest training item by timestamp, -1 when unknown;
                               NULL where the source has no timestamps (the paper split, synthetic) */
    int32_t *val_item;    /* [num_users] validation item, -1 when none; NULL without validation */
    float *val_weight;    /* its weight, where weight is set (else NULL): [num_users] as val_item,
                               or as val_items */
    /* A split of many items per user (NCF_HOLDOUT_RATIO, _TIME, _CUTOFF): user u's test items are
       test_items[test_ptr[u] .. test_ptr[u+1]), ascending, and its validation items val_items[
       val_ptr[u] .. val_ptr[u+1]) (val_ptr NULL without validation); test_item[] is then all -1 and
       val_item NULL. NULL for a split of one item per user. */
    int64_t *test_ptr, *val_ptr;
    int32_t *test_items, *val_items;
    int num_val_neg;  /* validation candidates per user besides its item */
    int32_t *val_neg; /* [num_users*num_val_neg], rows of validation users valid */
    /* What ncf_mpi_shard made of the data, all 0 for whole data. A shard holds the rows of
       users [user_lo, user_hi) only: items[] and train_user[] begin at the whole data's positive
       train_lo, eval_neg and val_neg at user_lo's row, and user_ptr indexes its own items (the
       other users look empty). */
    struct {
        int user_lo, user_hi;
        int64_t train_lo;
        int64_t total_train; /* the positives of the whole data; 0: not a shard */
        int *groups;         /* [NCF_MPI_GROUPS + 1] the first user of each group */
    } shard;
    /* Ids kept as the file wrote them: where a column has an id that is not a plain integer
       (digits, no sign, no leading zero, below 2^62: "0440213320", "034545104X", "u17"), every
       id of it is its bytes, id k being user_text[user_text_at[k] .. user_text_at[k+1]), in
       ascending byte order; raw_user is then NULL. NULL for integer ids. */
    char *user_text, *item_text;
    int64_t *user_text_at, *item_text_at; /* [num_users+1], [num_items+1] */
    ncf_load_report report;               /* what ncf_load_dataset read and dropped */
} ncf_dataset;

typedef enum {
    NCF_FORMAT_AUTO = 0, /* the paper split by its names, else any delimited log, its separator,
                            header and columns found from its first lines */
    NCF_FORMAT_DAT,      /* ml-1m, ml-10m ratings.dat: user::item::rating::timestamp */
    NCF_FORMAT_CSV,      /* comma-separated, with or without a header (ml-20m ratings.csv) */
    NCF_FORMAT_TAB,      /* ml-100k u.data: user<TAB>item<TAB>rating<TAB>timestamp */
    NCF_FORMAT_NCF       /* the paper's split: PREFIX.train.rating, .test.rating, .test.negative */
} ncf_format;

/* Which interactions of each user are its test items (validation follows the same rule inside
   training). The first four hold out one item per user, the NCF paper's protocol; RATIO, TIME,
   CUTOFF and ITEMS many (ncf_dataset.test_ptr), as RecBole's and cornac's tables do, evaluated by full ranking. */
enum {
    NCF_HOLDOUT_AUTO = 0, /* latest where the file has timestamps, else random */
    NCF_HOLDOUT_LATEST,   /* the latest by timestamp (ties, or no timestamps: the later line) */
    NCF_HOLDOUT_RANDOM,   /* one drawn by the seed */
    NCF_HOLDOUT_NONE,     /* none: train on everything (the model to ship; nothing to evaluate) */
    NCF_HOLDOUT_RATIO,    /* per user, round(holdout_fraction x its items), at least 1 and leaving 1:
                             the latest by timestamp where the file has them, else drawn by the seed */
    NCF_HOLDOUT_TIME,     /* a global time split: the last holdout_fraction of the log's positives by
                             timestamp (all of the first timestamp held out) */
    NCF_HOLDOUT_CUTOFF,   /* a global time split at holdout_cutoff: positives at or after it */
    NCF_HOLDOUT_SAVED,    /* (the report's) the split ncf_save_split wrote, read back */
    NCF_HOLDOUT_PAPER,    /* (the report's) the NCF paper split: each user's item in PREFIX.test.rating */
    NCF_HOLDOUT_ITEMS     /* cold start: holdout_fraction of the items, drawn by the seed, held out whole
                             (every interaction of theirs is test; validation, the same share of the
                             rest, whole too): models score items they never trained on */
};
/* header of ncf_dataset_opts */
enum { NCF_HEADER_AUTO = 0, NCF_HEADER_YES = 1, NCF_HEADER_NO = 2 };

typedef struct ncf_dataset_opts {
    ncf_format format;
    int min_ratings;    /* drop users with fewer positives (20 for ml-20m as MLPerf); 0 keeps all */
    int eval_negatives; /* sampled eval negatives per user (999 for MLPerf); 0: the
                           paper split's own file, or 99 (the paper) for other formats */
    uint64_t seed;      /* eval negatives, random hold-out and validation items */
    int validation;     /* 1: also hold out a validation item per user (ncf_hold_out_validation) */
    int holdout;        /* NCF_HOLDOUT_*: which interaction is the test item (AUTO) */
    float min_rating;   /* only interactions rated at least this are positives (default -inf:
                           all); needs a rating column */
    const char *sep;    /* field separator ("::", "\t", ",", ";", "|", " " for runs of blanks);
                           NULL: found from the first lines */
    int header;         /* NCF_HEADER_AUTO: found from the first lines (a known column name) */
    /* user, item, rating, timestamp, strength, event columns: a header name (case and
       punctuation ignored) or a 1-based number ("3"); NULL: by the header's names (userId,
       User-ID, ISBN, artistID, event, ...), or without a header user, item, rating, timestamp in
       that order, and the strength is the rating column. "" : none (rating, timestamp, event).
       Timestamps are integers (epoch seconds). The strength column is read only with a
       weighting. */
    const char *columns[6];
    int min_item_ratings; /* drop items with fewer positives (from the users kept); 0 keeps all */
    int kcore;            /* 1: repeat both filters until every user and item meets its minimum */
    /* Interaction strength (play counts, hours, clicks): each positive's loss term weighs its
       confidence 1 + alpha f(s), as implicit's iALS, s the sum of the strengths of its lines
       (a pair repeated sums them), f(s) = s (LINEAR) or log(1 + s) (LOG). The strength is
       columns[NCF_COL_STRENGTH], by default the rating column; a negative, NaN or non-numeric
       strength is an error naming file:line. NCF_WEIGHT_NONE (0): every positive weighs 1. */
    int weighting;
    float alpha; /* > 0 with a weighting (ncf_dataset_opts_default: 1) */
    /* 0 (the default): a text id is its field's bytes as written, blanks at either end included
       (they tell "Papers " from "Papers"); quotes delimit a field, and blanks outside them are
       not the id's. 1: blanks around an unquoted id are dropped (a "1, a, 5" file), and lookups
       must drop them too. Either way report.blank_edged_ids counts such fields. Plain integer
       ids are numbers, read with any blanks around them. */
    int trim_ids;
    /* An event log's kinds and what each is worth: "view=1,addtocart=3,transaction=5". Only lines
       whose event is listed are positives; a kind's value is each line's strength (a pair's
       lines sum), weighed as weighting says (which then needs no strength column). A kind
       without "=X" is worth 1. At most NCF_MAX_EVENT_KINDS kinds, names as the file writes
       them. NULL: every line a positive, the event column (if any) only counted by kind in the
       report. */
    const char *events;
    float holdout_fraction; /* NCF_HOLDOUT_RATIO and _TIME: the share held out, in (0, 1) (0.2) */
    int64_t holdout_cutoff; /* NCF_HOLDOUT_CUTOFF: the first timestamp held out for test */
} ncf_dataset_opts;

/* indices of ncf_dataset_opts.columns and ncf_load_report.columns */
enum { NCF_COL_USER = 0, NCF_COL_ITEM, NCF_COL_RATING, NCF_COL_TIME, NCF_COL_STRENGTH, NCF_COL_EVENT };
/* ncf_dataset_opts.weighting */
enum { NCF_WEIGHT_NONE = 0, NCF_WEIGHT_LINEAR, NCF_WEIGHT_LOG };

NCFDEF ncf_dataset_opts ncf_dataset_opts_default(void);
#ifndef NCF_NO_STDIO
/* Loads an interaction log: the NCF paper's split by its names, or any delimited file (the
   MovieLens files as downloaded, a TAB-separated log with a header, a quoted ';' export, ...:
   RFC 4180 quotes, LF, CRLF or CR line ends, a UTF-8 BOM). Keeps the positives (min_rating),
   drops users with fewer than min_ratings of them, merges repeated (user, item) pairs, holds
   out one item per user with two or more (opts.holdout), and draws eval candidates.
   ds->report says what was read and dropped. opts may be NULL (defaults). On failure *ds is
   left empty and the message names the file, line and field. */
NCFDEF int ncf_load_dataset(ncf_dataset *ds, const char *path, const ncf_dataset_opts *opts);
#endif
/* The same from a delimited log in memory (not the paper split); name is for messages. buf is
   only read. */
NCFDEF int ncf_load_dataset_mem(ncf_dataset *ds, const char *name, const void *buf, size_t len,
                                const ncf_dataset_opts *opts);
/* Builds a dataset from n (user, item, timestamp) triples in memory, as ncf_load_dataset does
   after parsing (the latest interaction held out). Raw ids must be in [0, 2^62). */
NCFDEF int ncf_dataset_from_triples(ncf_dataset *ds, const int64_t *users, const int64_t *items,
                                    const int64_t *timestamps, int64_t n, int min_ratings);
/* The index of a user (side NCF_USER) or item (NCF_ITEM) id as the file wrote it
   ("0440213320", or "42" for an integer id), or NCF_ERR_ARG when the dataset has no such id. */
NCFDEF int ncf_dataset_find(const ncf_dataset *ds, int side, const char *id);
/* The id of a user's or item's index as the file wrote it, NUL-terminated into buf: its
   length, or NCF_ERR_ARG (an index out of range, or buf shorter than the id and its NUL). */
NCFDEF int ncf_dataset_id(const ncf_dataset *ds, int side, int index, char *buf, size_t size);
/* Synthetic implicit data: users and items in `rank` taste clusters (each user draws
   70% of its items from its own cluster), power-law item popularity and user
   activity (at least 2 interactions each). One interaction per user is held out. */
NCFDEF int ncf_synthetic(ncf_dataset *ds, int num_users, int num_items, int64_t interactions, int rank, uint64_t seed);
/* (Re)draws n distinct eval negatives per test user among items it never rated. */
NCFDEF int ncf_sample_eval_negatives(ncf_dataset *ds, int n, uint64_t seed);
/* Moves one training item of every user with two or more out of training into a validation
   set, with n sampled negatives each: the latest by timestamp where the source had them
   (the second latest rating, the latest being the test item), else one chosen by the seed.
   It is never trained on; choose epochs and hyperparameters on it (ncf_fit, or
   ncf_evaluate with NCF_EVAL_VALIDATION) and the test figures stay unseen. On failure the dataset is unchanged. */
NCFDEF int ncf_hold_out_validation(ncf_dataset *ds, int n, uint64_t seed);
#ifndef NCF_NO_STDIO
/* Writes the split for another library to be scored on the same lines: PREFIX.train.tsv,
   PREFIX.validation.tsv (with validation items) and PREFIX.test.tsv, a "user<TAB>item" line a
   positive, ids as written (quoted where they hold a tab, a quote or a blank at either end).
   ncf_load_dataset(PREFIX) reads them back as a split of many items a user, the same users,
   items and positives (ranked in full). Weights are not written. Each file is replaced whole. */
NCFDEF int ncf_save_split(const ncf_dataset *ds, const char *prefix);
#endif
NCFDEF void ncf_dataset_free(ncf_dataset *ds);

/* ---- >>api-sampler: training examples -------------------------------------------------------- */
/* An epoch is every training positive once plus num_neg negatives each, drawn
   uniformly from the user's unrated items, every example shuffled on its own (or, with
   by_positive, the positives shuffled, each followed by its negatives). Every example is
   a pure function of (seed, epoch, position): no epoch is materialized, and the result is
   the same for any number of threads. The dataset must outlive the sampler. */
typedef struct ncf_sampler {
    const ncf_dataset *data;
    int num_neg;
    uint64_t seed;
    int64_t num_examples; /* per epoch: num_train * (1 + num_neg) */
    int bits;             /* shuffle: a Feistel permutation of [0, 2^bits) */
    int skip_held_out;    /* 0 (ncf_sampler_init's): negatives drawn among the items not in the
                               user's training list, as the NCF paper's code draws them: training
                               never reads the test or validation items. 1: never draw those items
                               either (how 0.6 trained; it reads them), to compare with its figures */
    int by_positive;      /* 0 (ncf_sampler_init's): every example shuffled on its own, as the
                               TF/MLPerf reference orders an epoch. 1: the positives shuffled, each
                               followed by its negatives: a batch holds a fifth as many users
                               (num_neg 4), whose rows and lists serve 1 + num_neg examples from the
                               cache and take one Adam step for them (the paper config 1.2x as
                               fast; its quality over seeds in docs/performance.md) */
    /* NULL (ncf_sampler_init's): negatives among every item. Else only items i with
       draw_only[i] != 0 are drawn (a draw of another is drawn again, up to 64 times): a features
       model trains with its items that have training positives only, since a cold or new item
       drawn as a negative, its vector its features' alone, would teach the model that such
       vectors are negatives. */
    const uint8_t *draw_only;
} ncf_sampler;

NCFDEF int ncf_sampler_init(ncf_sampler *s, const ncf_dataset *data, int num_neg, uint64_t seed);
/* Examples [start, start+n) of the epoch: users, items, labels (a positive's weight, 1 without a
   weighting; 0 a negative). On a
   shard, the examples of other ranks' users are 0, 0, 0: summed over the ranks, the batch. */
NCFDEF void ncf_sampler_fill(const ncf_sampler *s, int epoch, int64_t start, int n, int32_t *users, int32_t *items,
                             float *labels);
#endif /* NCF_INFERENCE_ONLY */

/* ---- >>api-model: create, free, pre-training, predict ---------------------------------------- */
/* One named slice of the parameter block. grads, adam_m and adam_v share the layout. */
typedef struct ncf_tensor {
    const char *name;
    size_t offset;  /* in floats, from params */
    int rows, cols; /* embeddings: [rows=ids][cols=width]; kernels: [in][out] */
} ncf_tensor;

#define NCF_MAX_TENSORS (6 + 2 * NCF_MAX_LAYERS)

typedef struct ncf_model {
    ncf_config cfg;
    size_t num_params;
    float *params, *grads, *adam_m, *adam_v; /* grads and moments: NULL when inference-only or read in
                                                place; params (and the embedding views below):
                                                NULL for an int8 model read in place */
    int64_t step;                            /* Adam steps taken */
    int64_t epoch;                           /* epochs completed (ncf_train_epoch sets it) */
    int64_t *raw_user, *raw_item;            /* integer ids of the source data, or NULL (none, or text) */
    char *user_text, *item_text;             /* text ids, as ncf_dataset's (ncf_model_set_ids), or NULL */
    int64_t *user_text_at, *item_text_at;
    int64_t *rated_ptr; /* [num_users+1] where each user's rated items start in rated[] */
    uint8_t *rated;     /* rated items (training and test), ascending per user, each as
                                       the gap from the one before minus one, a LEB128 varint; or NULL */
    int num_tensors;
    ncf_tensor tensors[NCF_MAX_TENSORS];
    /* views into params (NULL when the model type lacks them) */
    float *gmf_user, *gmf_item;   /* [users][mf_dim], [items][mf_dim] */
    float *mlp_user, *mlp_item;   /* [users][layers[0]/2], [items][layers[0]/2] */
    float *w[NCF_MAX_LAYERS];     /* w[l]: [layers[l-1]][layers[l]], l = 1..num_layers-1 */
    float *b[NCF_MAX_LAYERS];     /* b[l]: [layers[l]] */
    float *w_out, *b_out;         /* [mf_dim (GMF) + layers[last] (MLP)] (NULL for MF), [1] */
    float *user_bias, *item_bias; /* MF only: [users], [items] */
    struct ncf__scratch *scratch; /* private: activations and caches */
} ncf_model;

#ifndef NCF_INFERENCE_ONLY
/* Creates a model with initialized weights: embeddings N(0, init_sd), dense kernels
   glorot-uniform, output layer lecun-uniform, biases 0 (as the paper). The caller frees
   it with ncf_model_free. (Not in NCF_INFERENCE_ONLY, which only reads trained models.) */
NCFDEF int ncf_model_create(ncf_model **out, const ncf_config *cfg);
#endif
NCFDEF void ncf_model_free(ncf_model *m);
/* Logits (pre-sigmoid scores) of n (user index, item index) pairs: dense indices, not ids
   (ncf_find finds an id's). */
NCFDEF int ncf_predict_index(const ncf_model *m, const int32_t *user_index, const int32_t *item_index, int n,
                             float *logits);
/* Call after changing m->params by hand: rebuilds the cached item projection (out of memory,
   serving goes on without it: slower, the same answers). */
NCFDEF void ncf_model_params_changed(ncf_model *m);

#ifndef NCF_INFERENCE_ONLY
/* The paper's pre-training: starts a NeuMF from a trained GMF and MLP with the same
   users, items, mf_dim and layers. Embeddings and MLP layers are copied; the output
   layer becomes [alpha * w_gmf, (1 - alpha) * w_mlp], bias alpha*b_gmf + (1-alpha)*b_mlp,
   so alpha 1 (0) scores exactly as the GMF (MLP). Resets the step and Adam moments. */
NCFDEF int ncf_model_init_from(ncf_model *neumf, const ncf_model *gmf, const ncf_model *mlp, float alpha);

/* One model whose logit is the mean of n models' logits: MF models, or GMF models, over the
   same users and items (their factors may differ), side by side as one of the summed factors.
   MF: each model's rows scaled by 1/sqrt(n), biases averaged; GMF: the rows as they are, the
   output weights scaled by 1/n. Models of one setting trained from different seeds rank
   better averaged than alone (docs/tuning.md). The first model's ids, rated items, step and
   epoch; Adam moments zero. Models with side features (the same vocabulary) give one that
   serves new entities from them, its feature embeddings averaged the same way (they train
   no further: ncf_model_set_features starts them again). */
NCFDEF int ncf_model_average(ncf_model **out, ncf_model *const *models, int n);

/* Mean loss over the batch (sigmoid cross-entropy plus the L2 terms) without touching
   gradients. A label is 0 (a negative) or a positive's weight c in (0, 1e9] (1: unweighted),
   whose term is c times a positive's: c log(1 + e^-z), its gradient c (sigmoid(z) - 1). */
NCFDEF int ncf_loss(ncf_model *m, const int32_t *users, const int32_t *items, const float *labels, int n, double *loss);
/* Forward and backward: adds d(loss)/d(params) into m->grads (zero after ncf_model_create and
   after each ncf_update, so calls between updates accumulate) and sets *loss. */
NCFDEF int ncf_forward_backward(ncf_model *m, const int32_t *users, const int32_t *items, const float *labels, int n,
                                double *loss);
/* One optimizer step from m->grads (cfg.optimizer; Adam's embeddings dense or lazy as
   cfg.adam), then the gradients back to zero. */
NCFDEF void ncf_update(ncf_model *m);
/* ncf_forward_backward + ncf_update on fresh gradients. Returns NCF_OK and the mean loss in *loss. */
NCFDEF int ncf_train_step(ncf_model *m, const int32_t *users, const int32_t *items, const float *labels, int n,
                          double *loss);
/* Grows a model to a dataset whose users and items include the model's (new data: yesterday's
   model, today's log): known ids keep their rows and Adam moments, new ones start as a fresh
   model's (the config's seed), the dense layers and counters carry over, and the ids and
   rated items become the data's; training then goes on. Data that lacks an id of the model
   is refused with a message (its rows would be lost). On failure *m is unchanged. */
NCFDEF int ncf_model_grow(ncf_model **m, const ncf_dataset *data);
/* Adds n users (side NCF_USER) or items (NCF_ITEM) to the model under ids[0..n), with rows
   ([n][ncf_row_size] floats, as ncf_fold_in fits them), so that each is served, saved and
   loaded by id as the others are; an id the model knows gets the rows in place of its own (an
   id given twice, its last rows). The model grows once for them all. Other ids keep their rows
   and Adam moments, their indices moved past the new ones; a new user has no rated items. A
   model whose ids of that side are integers takes only plain integer ids. On failure *m is
   unchanged. */
NCFDEF int ncf_model_add(ncf_model **m, int side, const char *const *ids, const float *rows, int n);
/* Adds to a dataset the model's users and items it lacks, with no interactions, so that
   ncf_model_grow keeps their rows (the demo's --keep_missing). Indices may change (ids stay in
   ascending order); on failure the dataset is unchanged. */
NCFDEF int ncf_dataset_add_ids(ncf_dataset *data, const ncf_model *m);
/* Copies the dataset's raw ids and each user's rated items (training and test) into
   the model, so a saved model answers in the user's own ids and can skip rated items;
   also caches the item projection that ncf_recommend uses. */
NCFDEF int ncf_model_set_ids(ncf_model *m, const ncf_dataset *data);
#endif

/* ---- >>api-serving: ids, recommend, fold-in, similar items (ids needed) ---------------------- */
/* Ids and indices. An id is what the user's file wrote ("0440213320", "u17", "42"); an index
   is its dense position, which the _index calls take. The index of a user (side NCF_USER) or
   item (NCF_ITEM) id, or NCF_ERR_ARG when the model does not know it: */
NCFDEF int ncf_find(const ncf_model *m, int side, const char *id);
/* The id of a user's or item's index, NUL-terminated into buf: its length, or NCF_ERR_ARG
   (index out of range, no ids, or buf too short: NCF_MAX_ID_BYTES + 1 always suffices). */
NCFDEF int ncf_id(const ncf_model *m, int side, int index, char *buf, size_t size);

/* What a recommendation returns (ncf_rec_opts_default() gives the values in brackets; NULL
   options, here and in every call that takes options, mean the defaults). Lists hold item
   indices, in any order; the library sorts a copy. */
typedef struct ncf_rec_opts {
    int k;                /* the k best items [10] */
    int exclude_rated;    /* skip the items the user rated, training and test [1] */
    const int32_t *allow; /* score only these (in stock, in a category...) [NULL: the catalogue] */
    int num_allow;
    const int32_t *deny; /* never these (already shown, a folded-in user's own items) [NULL] */
    int num_deny;
    const float *user_row; /* a user given by its rows (ncf_fold_in), scored instead of the user [NULL] */
    int probabilities;     /* scores as probabilities, sigmoid(logit) [0: logits] */
    void *work;            /* a caller's workspace of ncf_rec_workspace_size bytes (any alignment): no heap,
                              and the answer is the heap's bit for bit [NULL: the heap] */
    size_t work_size;
    int threads; /* 1: one list's catalogue shared among the library's threads (ncf_set_threads;
                             a large catalogue scored alone); 0: the calling thread only, no team started
                             (a server's request threads) [0]. ncf_recommend_users always uses them. */
} ncf_rec_opts;
NCFDEF ncf_rec_opts ncf_rec_opts_default(void);
/* The bytes of ncf_rec_opts.work these options need (a few KB for small models;
   docs/devices.md has sizes); the same size serves ncf_similar. */
NCFDEF size_t ncf_rec_workspace_size(const ncf_model *m, const ncf_rec_opts *opts);
/* The k best candidates for user index u (or opts->user_row), best first (ties: the lower
   index), as item indices with their scores (scores may be NULL). Returns how many were
   written (fewer than k when the candidates run out) or a negative NCF_ERR_* code (an index
   out of range in a list, a workspace too small). Reads the model only (see THREAD SAFETY). */
NCFDEF int ncf_recommend_index(const ncf_model *m, int u, const ncf_rec_opts *opts, int32_t *items, float *scores);
/* The same for n users at once (users NULL: users 0..n-1), on all threads, a user at a time:
   user j's list at items[j*k..], its length in counts[j] (the rest -1). The lists are those
   ncf_recommend_index gives, bit for bit, for any number of threads. */
NCFDEF int ncf_recommend_users(const ncf_model *m, const int32_t *users, int n, const ncf_rec_opts *opts,
                               int32_t *items, float *scores, int *counts);
/* The logits of n others for one side's index: user index `index` against items others[0..n)
   (side NCF_USER), or item index `index` against users (NCF_ITEM), as training scores them;
   with row not NULL, that side's rows (ncf_fold_in) stand in for the index's. */
NCFDEF int ncf_predict_for(const ncf_model *m, int side, int index, const float *row, const int32_t *others, int n,
                           float *logits);

/* The k items most like item index `index` (side NCF_ITEM), or the k users most like a user
   (NCF_USER), by cosine, best first (ties: the lower index; never the item or user itself), as
   ncf_recommend_index returns them. Like means: MF, the factors; GMF and NeuMF, the GMF
   factors weighted by the output layer (for NeuMF the GMF half only: its MLP half scores a user
   and an item together and has no vector of either alone); MLP, that side's half of the first
   dense layer. opts: k, work and probabilities; for items also allow and deny. opts->work
   (ncf_rec_workspace_size bytes) makes it allocate nothing. */
NCFDEF int ncf_similar(const ncf_model *m, int side, int index, const ncf_rec_opts *opts, int32_t *out, float *scores);

/* Fold-in: a user not in training (or a known user with fresh items) served without
   retraining, and the mirror for a new item. Its rows ([GMF or MF][MLP][MF bias], ncf_row_size
   floats) are fitted to the other side's indices it interacted with, every other parameter
   frozen: a few Adam steps on those as positives and fresh uniform negatives (seeded). An ALS
   model's row is instead the exact solution of its training's least squares for them (each of
   confidence 1; the options other than work do not apply). The model is only read (any number
   of threads); a user's row then goes to ncf_rec_opts.user_row or ncf_predict_for, an item's to
   ncf_predict_for. */
typedef struct ncf_fold_opts {
    int steps;          /* Adam steps (ncf_fold_opts_default gives the measured choice) */
    float lr;           /* their learning rate */
    int num_neg;        /* negatives per given index, drawn afresh each step among the others [4] */
    float l2;           /* L2 on the rows */
    uint64_t seed;      /* the negatives [1] */
    const float *start; /* start from these rows (a known one's: ncf_row) [NULL: zeros] */
    void *work;         /* a caller's workspace of ncf_fold_workspace_size bytes: no heap [NULL] */
    size_t work_size;
} ncf_fold_opts;
NCFDEF ncf_fold_opts ncf_fold_opts_default(void);
/* Floats of a user's or an item's rows: [GMF or MF][MLP][MF bias]. */
NCFDEF int ncf_row_size(const ncf_model *m);
/* User (side NCF_USER) or item (NCF_ITEM) index's rows, into row (ncf_row_size floats). */
NCFDEF int ncf_row(const ncf_model *m, int side, int index, float *row);
/* Bytes of ncf_fold_opts.work for a fold-in from n given indices. */
NCFDEF size_t ncf_fold_workspace_size(const ncf_model *m, int n);
/* The rows of a new user (side NCF_USER) who interacted with items given[0..n), or of a new
   item (NCF_ITEM) that users given[0..n) interacted with (indices; repeats count once). */
NCFDEF int ncf_fold_in(const ncf_model *m, int side, const int32_t *given, int n, const ncf_fold_opts *opts,
                       float *row);

/* Serving by id, one call each: the answer's item ids as written, each NUL-terminated, one
   after another in ids (size bytes; opts->k * (NCF_MAX_ID_BYTES + 1) always suffices), their
   scores in scores (or NULL). Returns how many, or a negative NCF_ERR_* (an unknown id named,
   ids too small). opts as ncf_recommend_index takes them. They allocate a few small buffers;
   the index forms above take workspaces. */
NCFDEF int ncf_recommend_for_id(const ncf_model *m, const char *user, const ncf_rec_opts *opts, char *ids, size_t size,
                                float *scores);
/* A new user given by the ids of its items: folded in (fold NULL: ncf_fold_opts_default), its
   own items never recommended (besides opts->deny). */
NCFDEF int ncf_recommend_for_items(const ncf_model *m, const char *const *items, int n, const ncf_rec_opts *opts,
                                   const ncf_fold_opts *fold, char *ids, size_t size, float *scores);
NCFDEF int ncf_similar_to_id(const ncf_model *m, const char *item, const ncf_rec_opts *opts, char *ids, size_t size,
                             float *scores);

/* Integer ids (int64): the same for models whose ids are integers. A text id is found by its
   decimal form (42 finds "42"); a model whose item ids are text has no integer items to
   return, so ncf_recommend refuses it (ncf_recommend_index and ncf_id serve it). */
/* The logit of one (user, item). NCF_ERR_ARG for an id the model never saw (a new user is
   served by ncf_fold_in from its items; a new item needs training or ncf_fold_in). */
NCFDEF int ncf_predict(const ncf_model *m, int64_t user, int64_t item, float *logit);
/* ncf_recommend_index by integer ids: the opts->k best items for a user, best first, as item
   ids (with opts->work, no heap: a device's call). One (user, item)'s score without the heap:
   opts.allow = &i (the item's index, ncf_find), num_allow 1, exclude_rated 0. */
NCFDEF int ncf_recommend(const ncf_model *m, int64_t user, const ncf_rec_opts *opts, int64_t *items, float *scores);

/* ---- >>api-features: side features, cold start ------------------------------------------------ */
/* Side features of users or items (genres, tags, authors, attributes), as a file beside the log
   gives them: one row an entity with a column of tokens ("Action|Comedy"), long form (id,
   feature[, weight]: an entity's rows add up), 0/1 flag columns or categorical columns. Ids
   and tokens are kept as written. Owns its arrays; release with ncf_features_free. (Not in an
   NCF_INFERENCE_ONLY build: a device serves a features model's known entities, read in place.) */
#ifndef NCF_INFERENCE_ONLY
typedef struct ncf_features {
    int num_entities; /* entity k's id: ids[ids_at[k] .. ids_at[k+1]), in the order first read */
    char *ids;
    int64_t *ids_at;  /* [num_entities + 1] */
    int num_features; /* feature j's token: vocab[vocab_at[j] .. vocab_at[j+1]), ascending bytes */
    char *vocab;
    int64_t *vocab_at; /* [num_features + 1] */
    int64_t *ptr;      /* [num_entities + 1]: entity k's features feat[ptr[k] .. ptr[k+1]) */
    int32_t *feat;     /* ascending within an entity, each once */
    float *weight;     /* as given (1 where the file gives none; a repeated feature sums) */
    int64_t records;   /* records read (the header not counted) */
} ncf_features;

typedef struct ncf_features_opts {
    const char *sep; /* field separator, as ncf_dataset_opts.sep (NULL: found from the first lines) */
    int header;      /* NCF_HEADER_AUTO: a header when the first record names a column asked for
                        by name or a known one (an id alias, genres, tags, features, weight) */
    /* "ID,FEATURE...[,weight:W]": the id column, then the feature columns, each a 1-based number,
       a range "6-24" or a header name; W the weight column. One feature column: its field split
       at token_sep, each token a feature as written. Several: a value "1" is the feature named
       for its column (flags: u.item's genres), "0" and "" none, any other v "name=v" (u.user's
       age, gender, occupation), a column's name being its header's or its number. NULL: the
       first column and the one named genres, tags, features (or the second), and weight where
       the header names one. */
    const char *columns;
    const char *token_sep; /* splits a single feature column ("|"); "": the field is one token */
    int trim_ids;          /* as ncf_dataset_opts.trim_ids */
} ncf_features_opts;

NCFDEF ncf_features_opts ncf_features_opts_default(void);
#ifndef NCF_NO_STDIO
/* Reads a features file. On failure *f is left empty and the message names the file, line and
   field. Memory is bounded by the file's size. */
NCFDEF int ncf_load_features(ncf_features *f, const char *path, const ncf_features_opts *opts);
#endif
NCFDEF int ncf_load_features_mem(ncf_features *f, const char *name, const void *buf, size_t len,
                                 const ncf_features_opts *opts);
/* From a CSR matrix, as LightFM takes features: n entities named ids[k], row k's features
   idx[ptr[k] .. ptr[k+1]) (columns of names[0..num_features)) with weights w (NULL: 1). */
NCFDEF int ncf_features_from_csr(ncf_features *f, int n, const char *const *ids, int num_features,
                                 const char *const *names, const int64_t *ptr, const int32_t *idx, const float *w);
NCFDEF void ncf_features_free(ncf_features *f);

/* ncf_model_set_features' flags: NCF_FEATURES_NO_ID, a features-only side (no id embedding). */
enum { NCF_FEATURES_NO_ID = 1 };
/* Gives one side of a model (NCF_USER or NCF_ITEM) its features: from here on each entity's
   input vector, in every table (GMF, MLP, MF and its bias), is its id embedding plus the
   weighted mean of its features' embeddings (weights normalized to sum 1, as LightFM
   normalizes: an item with nine tags moves as far as one with one), and training moves both.
   An entity without training positives in data (a cold item) has no id embedding: its vector
   is its features' alone, as a brand-new one's. The model's tables keep the composed vectors,
   so serving, evaluation and files read them as any model's; the feature vocabulary and
   embeddings go into the model file. data holds the model's ids (its features' entities it
   lacks are skipped: ncf_model_add_features adds them after training). Gradient optimizers
   only (ALS refuses). Calling it again replaces that side's features. scale (1 as LightFM;
   1/64 to 64) multiplies the features' part: how far it moves against the id's in a step, a
   setting ncf_tune searches. */
NCFDEF int ncf_model_set_features(ncf_model *m, int side, const ncf_features *f, const ncf_dataset *data, int flags,
                                  float scale);
/* The composed row ([ncf_row_size] floats, as ncf_row) of an entity with features tokens[0..n)
   and weights (NULL: 1): for ncf_model_add, ncf_predict_for and a fold-in's start. Tokens the
   model does not know are skipped; their count is returned (n: none known, the row is 0). */
NCFDEF int ncf_feature_row(const ncf_model *m, int side, const char *const *tokens, const float *weights, int n,
                           float *row);
/* Adds every entity of f the model does not know yet, each with the row of its features (the
   new items of a catalogue), so that it is recommended, scored and similar-to by id. *added
   (if not NULL) gets their number. On failure *m is unchanged. */
NCFDEF int ncf_model_add_features(ncf_model **m, int side, const ncf_features *f, int *added);
/* The popularity-by-feature baseline: each item scored by the mean training popularity of the
   training items sharing its features (weighted by its weights), an item without features
   known to training by the mean of all; scores[num_items] for ncf_eval_opts.baseline. */
NCFDEF int ncf_feature_popularity(const ncf_features *f, const ncf_dataset *data, float *scores);
#endif

/* ---- >>api-model-file: save, load, read in place --------------------------------------------- */
/* A model file: "NCF\0", format version, endianness mark, config, step and epoch, then
   sections that each start 8-byte aligned: raw ids (int64), each user's rated items
   (varint gaps, optional), the parameters (float32; or, in an int8 file, the embedding
   tables as int8 rows with a float32 scale each), optionally the Adam moments (to resume
   training exactly), the side features' vocabulary and embeddings (version 5, where the model
   has them); CRC32 of all of it. Always little-endian. Versions 2 to 4 are still read. */
#define NCF_FORMAT_VERSION 5
enum {
    NCF_SAVE_MODEL = 0,   /* the model alone: parameters, ids, rated items */
    NCF_SAVE_ADAM = 1,    /* keep the Adam moments, to resume training exactly (an SGD or ALS model has none) */
    NCF_SAVE_INT8 = 2,    /* embedding tables as int8 rows, symmetric per row (scale = max |x| / 127):
                             about 4x smaller, serving only (no Adam moments) */
    NCF_SAVE_NO_RATED = 4 /* leave out the users' rated items (then exclude_rated has nothing to skip) */
};
/* Serializes into a buffer the caller releases with ncf_free; flags are NCF_SAVE_* (1 is
   NCF_SAVE_ADAM, as the with_adam of 0.2). An NCF_INFERENCE_ONLY build keeps no Adam
   moments: it saves without them and skips them when loading. */
NCFDEF int ncf_save_mem(const ncf_model *m, int flags, void **buf, size_t *len);
/* A new model from a buffer, copied; every size, the version and the CRC are checked. An
   int8 file's rows are dequantized (scale * q, as serving in place computes them). */
NCFDEF int ncf_load_mem(ncf_model **out, const void *buf, size_t len);
/* A model read in place: its parameters, ids and rated items stay in buf (flash, a mapped
   file), which must stay unchanged while the model lives; no parameter is copied or
   initialized, and only the small model record is allocated. buf must be 8-byte aligned
   and a version 3 file; the same checks as ncf_load_mem, and the raw ids must ascend (as
   every loader assigns them). Such a model serves and evaluates only (training and
   ncf_model_set_ids refuse it). A big-endian host gets a copy (ncf_load_mem). */
NCFDEF int ncf_model_open(ncf_model **out, const void *buf, size_t len, int flags);
/* flags of ncf_model_open: NCF_OPEN_VERIFIED, for a buffer the firmware has verified itself
   (its CRC checked when it was written to flash, say), skips the two passes over the whole
   file, the CRC and the scan of every parameter for non-finite values (docs/devices.md has
   what that saves on a Cortex-M, make device). The layout is still checked (sizes, offsets,
   id tables, rated items), so a damaged buffer may score wrongly but is never read outside
   its len. */
enum { NCF_OPEN_VERIFIED = 1 };
#ifndef NCF_NO_STDIO
/* Writes a new temporary file beside PATH (created exclusively, flushed to the disk), then
   renames it over PATH: a failure never leaves a half model or touches the old one. */
NCFDEF int ncf_save(const ncf_model *m, const char *path, int flags);
NCFDEF int ncf_load(ncf_model **out, const char *path);
/* A model file read whole, as ncf_load reads it (its magic checked first, folders and devices
   refused), into a block of *len bytes aligned for ncf_model_open, which the caller keeps
   while the model lives and then releases with ncf_free. */
NCFDEF int ncf_model_read_file(const char *path, void **buf, size_t *len);
#endif
NCFDEF void ncf_free(void *p);

#ifndef NCF_INFERENCE_ONLY
/* ---- >>api-training: train, evaluate --------------------------------------------------------- */
/* Called every few batches and at the end: examples done of total, mean loss so far. An ALS
   epoch reports every few thousand rows fitted as that share of total, its loss NaN until the
   end (it is the objective's over the whole epoch). */
typedef void (*ncf_progress_fn)(void *ctx, int64_t done, int64_t total, double mean_loss);

/* One epoch of the sampler in batches of cfg.batch_size. *mean_loss may be NULL. The threads
   stay in one parallel region for many steps and wait on each other only when a step needs
   it (three times a step), so a busy machine costs little (see THREADS above). */
NCFDEF int ncf_train_epoch(ncf_model *m, const ncf_sampler *s, int epoch, ncf_progress_fn progress, void *ctx,
                           double *mean_loss);
/* Part of an epoch: its examples [first, first + count), in batches from first (a time
   budget, an epoch resumed midway). Does not refresh the serving cache as ncf_train_epoch does. */
NCFDEF int ncf_train_examples(ncf_model *m, const ncf_sampler *s, int epoch, int64_t first, int64_t count,
                              ncf_progress_fn progress, void *ctx, double *mean_loss);
/* An epoch of each of n models, models[k] drawing from samplers[k] (seeds to average with
   ncf_model_average): MF models trained by SGD one example a step side by side, one thread
   each; the others in turn. Progress is model 0's; *mean_loss (may be NULL) the mean of theirs.
   Each model's bits are those of its own ncf_train_epoch. */
NCFDEF int ncf_train_epoch_each(ncf_model *const *models, const ncf_sampler *samplers, int n, int epoch,
                                ncf_progress_fn progress, void *ctx, double *mean_loss);

/* Means over the users evaluated, as RecBole defines them, T_u the user's held-out items and
   hit(j) whether its j-th ranked item (from 0) is one: HR@k (any hit in the top k), NDCG@k (DCG
   of the hits, 1 / log2(j + 2) each, over the ideal DCG of min(|T_u|, k) hits), MRR (1 / the
   rank of the best held-out item, over the whole ranking), Recall@k (hits / |T_u|), Precision@k
   (hits / k), MAP@k (the sum of Precision@(j+1) over the hits in the top k, over min(|T_u|, k)).
   A candidate that ties a held-out item's score ranks above it; a non-finite score ranks last. */
typedef struct ncf_metrics {
    double hr, ndcg;
    int users; /* users evaluated: with a held-out item (and in the sample, if any) */
    double mrr;
    double recall, precision, map;
    int k; /* the cut-off of the @k figures */
    /* full ranking only (else 0): the share of the catalogue in some user's top k, and the mean
       over users of the mean training positives of the items in their top k */
    double coverage, popularity;
} ncf_metrics;

enum { NCF_EVAL_TEST = 0, NCF_EVAL_VALIDATION = 1 };
/* ncf_eval_opts.full_ranking: the sampled negatives, or every item the user has not rated */
enum { NCF_SAMPLED = 0, NCF_FULL_RANKING = 1 };

/* ncf_eval_opts.metric: the figure that chooses (the epoch, early stopping, the search) */
enum { NCF_METRIC_HR = 0, NCF_METRIC_NDCG, NCF_METRIC_MRR, NCF_METRIC_RECALL, NCF_METRIC_PRECISION, NCF_METRIC_MAP };
#define NCF_MAX_KS 8    /* cut-offs in one ncf_evaluate_at */
#define NCF_MAX_K 10000 /* the largest cut-off */

typedef struct ncf_eval_opts {
    int k;            /* HR@k and NDCG@k (10) */
    int target;       /* NCF_EVAL_TEST or NCF_EVAL_VALIDATION */
    int full_ranking; /* rank the held-out item against every item the user has not rated, not
                         against its sampled negatives */
    int max_users;    /* full ranking on a large catalogue: about this many users, a fixed
                         sample by the seed (0: every user) */
    uint64_t seed;
    int metric; /* NCF_METRIC_*: what ncf_fit and ncf_tune choose on, at k (HR) */
    /* full ranking: 1 ranks the held-out items among the items with no training positive only
       (a cold-start split's unseen items), 0 among every item (0) */
    int cold_only;
    /* model NULL: items scored by these [num_items] scores, the same for every user (a random
       or popularity-by-feature baseline, ncf_feature_popularity), not by popularity (NULL) */
    const float *baseline;
} ncf_eval_opts;

NCFDEF ncf_eval_opts ncf_eval_opts_default(void);
/* The figures at opts->k of the test or validation items (opts NULL: test HR@10 and the rest,
   sampled). Each held-out item is ranked against its sampled negatives, or with full_ranking
   against every item the user did not rate in training: rank = the candidates scoring >= it
   (ties count against it), HR = rank < k, NDCG = 1/log2(rank + 2) when rank < k. model NULL:
   the popularity baseline's figures on the same candidates (items scored by their training
   positives): a model that does not beat them has learned nothing about the users.
   NCF_ERR_DATA when the dataset holds none out (NCF_HOLDOUT_NONE): nothing to evaluate. */
NCFDEF int ncf_evaluate(const ncf_model *model, const ncf_dataset *data, const ncf_eval_opts *opts, ncf_metrics *out);
/* The figures at each of ks[0..num_ks) (num_ks <= NCF_MAX_KS, each in 1..NCF_MAX_K; opts->k is
   not read) from one ranking: out[j] at ks[j]. A split of many items per user is evaluated by
   full ranking only. model NULL: the popularity baseline's, as ncf_evaluate's. */
NCFDEF int ncf_evaluate_at(const ncf_model *model, const ncf_dataset *data, const ncf_eval_opts *opts, const int *ks,
                           int num_ks, ncf_metrics *out);
/* The value of a figure (NCF_METRIC_*) in m. */
NCFDEF double ncf_metric_value(const ncf_metrics *m, int metric);

/* Training with the epoch chosen on validation, never on test. */
typedef struct ncf_fit_opts {
    int epochs;               /* epochs to train at most [20] */
    int patience;             /* stop after this many epochs without a validation gain; 0: never [0] */
    int decay;                /* 1: the learning rate falls linearly over the epochs, lr (1 - j / epochs) in
                                 the j-th from 0: SGD one example a step reaches in 20-40 epochs what takes
                                 it 256 at a constant rate (Rendle et al.; docs/tuning.md) [0] */
    int by_positive;          /* 1: the epoch shuffled by positive (ncf_sampler.by_positive) [0] */
    ncf_eval_opts eval;       /* what chooses: validation HR@eval.k, sampled or full ranking [HR@10, sampled] */
    ncf_progress_fn progress; /* within each epoch, or NULL */
    void *ctx;                /* progress's and epoch_done's first argument */
    /* after each epoch's evaluation: the epoch's count, its mean training loss (NaN for ALS until
       its end, as progress) and its validation figures, or NULL [NULL] */
    void (*epoch_done)(void *ctx, int epoch, double mean_loss, const ncf_metrics *validation);
} ncf_fit_opts;
typedef struct ncf_fit_report {
    int chosen_epoch; /* the epoch m is left at (its count; 0: none beat the start) */
    int epochs_trained;
    ncf_metrics chosen; /* the chosen epoch's validation figures */
} ncf_fit_report;
NCFDEF ncf_fit_opts ncf_fit_opts_default(void);
/* Trains m on the data's training positives from its next epoch (m->epoch + 1), evaluates
   every epoch on the validation items (ncf_hold_out_validation, or ncf_dataset_opts.validation),
   and leaves m at the epoch with the best validation HR, its parameters and Adam moments as
   they were then. Nothing it does reads the test items (the sampler draws negatives among
   the items not in training): evaluate the test once, after. rep may be NULL; opts NULL:
   ncf_fit_opts_default. */
NCFDEF int ncf_fit(ncf_model *m, const ncf_dataset *data, const ncf_fit_opts *opts, ncf_fit_report *rep);

/* A search for good settings on the validation split (never the test): brackets of successive
   halving (Jamieson and Talwalkar 2016; Hyperband's brackets, Li et al. 2018) on a ladder of
   2^(j/2) planned seconds, smallest first, each bracket's three rungs a quarter of its seconds:
   many settings trained a few epochs, the best third of each family (NeuMF, GMF, MF by Adam, MF
   by SGD one example a step, MF by ALS) three times as long, the best third of each family of
   those to the full epochs, each run choosing its epoch on validation with patience (ncf_fit; a
   decayed run trains all its epochs); a later rung then takes the rest by rank while its
   quarter pays, and a lone run of SGD one example a step (one thread) takes the best such run
   left out as its partner on the other thread. A run an earlier bracket made is taken as it
   was; the first run past three quarters of the budget ends the search, and the winner is the
   best run on validation. So a larger budget runs a smaller one's runs first, the same, and
   never chooses worse on validation. It
   draws model type (MF half the time, GMF and NeuMF a quarter each), factors, MLP widths,
   learning rate, L2, negatives per positive, batch size, for a third of the MF trials Rendle et
   al.'s recipe (SGD one example a step, its rate decayed), for a third ALS (its L2 and
   unobserved weight) and, when the data has weights, whether to use them; trial 0 is
   ncf_config_default. An MF or GMF winner's seeds then train on training alone in step, and
   the epoch at which their average does best on validation is the final's (rep->averaged).
   The plan is fixed by the budget, the data's size and the seed through a cost model of each
   run (its training examples and evaluations), never by a clock, so a search
   gives the same table on 1 or many threads and on any machine; only max_seconds, when set,
   looks at the time. */
typedef struct ncf_trial {
    int trial;              /* which settings (0: the defaults), in the order drawn */
    int rung;               /* 0, 1 or 2: its round of the halving */
    ncf_config cfg;         /* num_users, num_items from the data */
    int weighted;           /* 1: trained with the data's weights */
    int epochs;             /* the rung's epochs at most */
    int epochs_trained;     /* fewer where patience stopped it */
    int decay;              /* 1: its learning rate fell over its epochs (ncf_fit_opts.decay) */
    int chosen_epoch;       /* its best validation epoch (0: none beat the start) */
    ncf_metrics val;        /* validation figures at that epoch */
    double planned_seconds; /* its share of the plan: the cost model's seconds of the run, half of it for SGD
                               one example a step (two such runs train at once, one thread each) */
    int beside;             /* 1: trained at once with the run before or after it (their time is shared) */
    int partner;            /* 1: a lone SGD-one-example-a-step run's partner, beyond its rung's quarter */
    int features[2];        /* users', items' side features (ncf_tune_opts.features): 0 not used, 1 beside the
                               id embedding, 2 alone (NCF_FEATURES_NO_ID) */
    float feature_scale;    /* their ncf_model_set_features scale */
} ncf_trial;
typedef struct ncf_tune_report {
    int num_runs;    /* rows of runs[], in the order run */
    ncf_trial *runs; /* owned: ncf_tune_report_free */
    int best;        /* runs[best]: the winner, the best run on validation (then the earlier run) */
    int num_trials;  /* settings run (rung 0's runs) */
    int rung_epochs[3];
    double planned_seconds;          /* the runs' costs summed, the seeds' below with them */
    int seeds;                       /* the final model averages the winner trained from this many seeds */
    ncf_trial averaged;              /* seeds > 1: those seeds trained on training alone, in step, their
                               average's validation after each epoch choosing final_epochs (patience
                               as in a run, from the winner's chosen epoch on; rung 3, trial and
                               settings the winner's; rung -1 when not run) */
    int final_epochs;                /* the epochs the final training runs: the average's chosen epoch, or
                               the winner's (0 in a report made by hand: the winner's) */
    int too_small;                   /* 1: the budget fits no run (nothing run; train the defaults) */
    int stopped;                     /* 1: max_seconds passed, and the runs not started were dropped */
    double budget;                   /* the budget planned to: opts->budget, or the one from the data's size */
    const ncf_features *features[2]; /* opts->features, borrowed: ncf_tune_final trains the winner with them */
} ncf_tune_report;
typedef void (*ncf_tune_progress_fn)(void *ctx, const ncf_tune_report *so_far, const ncf_trial *next);
typedef struct ncf_tune_opts {
    double budget;                 /* planned seconds (the cost model's) for the search and the final
                                 training: three quarters for the brackets' runs, the rest (a quarter
                                 at least) for the final's seeds [0: from the data's size, 50 epochs of
                                 ncf_config_default by the cost model and 30 s at least] */
    uint64_t seed;                 /* draws the settings; also each model's seed [1] */
    int max_epochs;                /* the last rung's epochs; rungs of a ninth and a third of it [18] */
    int patience;                  /* within a run [3] */
    ncf_eval_opts eval;            /* what chooses [validation HR@10, sampled] */
    double max_seconds;            /* > 0: start no run past this many seconds of wall time [0] */
    int seeds;                     /* an MF or GMF winner: the final model averages up to this many
                                      seeds of it, as what the rungs leave of the budget (a quarter
                                      at least) pays for: their epochs chosen on training alone, then
                                      trained on training + validation [4] */
    ncf_tune_progress_fn progress; /* before each run (next) and at the end (next NULL), or NULL */
    void *ctx;                     /* progress's and epoch_done's first argument */
    /* After each epoch of a run (ncf_fit_opts.epoch_done): the run, the epoch, its mean loss and
       the validation figures (NULL when not evaluated), or NULL. Of two runs side by side only
       the first reports, from the thread that runs it, so calls never overlap. */
    void (*epoch_done)(void *ctx, const ncf_trial *run, int epoch, double mean_loss, const ncf_metrics *validation);
    /* Side features of users and items (NULL: none), kept by the caller until ncf_tune_final:
       each trial uses each side's without, beside the id embedding or alone (a third each,
       trial 0 by feature_flags), at a scale of 1/4 to 4 (trial 0: 1). Trials of ALS and of SGD one example a step use
       none (ALS has no room for them; the other's step is its own, without them). A search
       choosing among unseen items (eval.cold_only) with item features draws neither, and each
       trial's items take their features, beside the id or alone. */
    const ncf_features *features[2];
    int feature_flags[2]; /* trial 0's: ncf_model_set_features' flags for that side [0] */
} ncf_tune_opts;
NCFDEF ncf_tune_opts ncf_tune_opts_default(void);
/* Runs the search on data (with validation items: ncf_hold_out_validation) and fills rep
   (opts NULL: ncf_tune_opts_default). */
NCFDEF int ncf_tune(const ncf_dataset *data, const ncf_tune_opts *opts, ncf_tune_report *rep);
/* The winner trained anew on the training and the validation positives, for rep->final_epochs:
   the model to evaluate on test, once, and to ship. An MF or GMF winner is trained from
   rep->seeds seeds (the winner's, then the next ones) and averaged (ncf_model_average), for the
   epochs at which their average trained on training alone did best on validation (an average
   of models is often at its best later than one of them). Its ids are the data's. data may
   also be the same log loaded without a hold-out (NCF_HOLDOUT_NONE, no validation): the winner
   is then trained on its every interaction, for the same epochs (the model to ship, whose
   settings the split chose and whose test figures the split gave). */
NCFDEF int ncf_tune_final(ncf_model **out, const ncf_dataset *data, const ncf_tune_report *rep,
                          ncf_progress_fn progress, void *ctx);
NCFDEF void ncf_tune_report_free(ncf_tune_report *rep);

#endif

#if defined(NCF_MPI) && !defined(NCF_INFERENCE_ONLY)
/* ---- >>api-mpi: data-parallel training over ranks (NCF_MPI; build with mpicc) ---------------- */
/* Users fall in NCF_MPI_GROUPS fixed groups, cut where the positives cross 1/G of them; each
   rank holds whole groups: their users' positives and eval items, and the only current copy of
   their embedding rows. Items and the dense layers are on every rank, the same everywhere. A
   step's batch is the single-process batch; each rank runs its users' examples of it. The
   gradients are summed group by group, the groups' sums folded as a fixed binary tree whose
   pairs on two ranks are one message, so the model comes out the same bit for bit for any
   number of ranks up to
   NCF_MPI_GROUPS (it is not ncf_train_epoch's, which sums the batch in one run). Every function
   here is collective: all ranks of comm call it, and all return the same status, with the
   message of the first rank that failed. */
#ifndef NCF_MPI_GROUPS
#define NCF_MPI_GROUPS 16 /* the most ranks; more groups are more partial sums to keep */
#endif
/* ncf_load_dataset and then ncf_mpi_shard, over the ranks, without any rank holding the whole
   log: each rank reads a byte range of the file (cut at line ends, so a quoted field must not
   hold one), parses it, and sends each line to the rank gathering its user's lines, where the
   one-process build runs (the filters' counts summed over the ranks); the users then move to
   the ranks ncf_mpi_shard gives them. The same shard, bit for bit, for any number of ranks. The
   ids are numbered together and kept whole on every rank, as are the per-user arrays (a few
   bytes a user). A delimited log only, split one item per user (the paper's split and saved
   splits: ncf_load_dataset, then ncf_mpi_shard). */
NCFDEF int ncf_mpi_load_dataset(ncf_dataset *ds, const char *path, const ncf_dataset_opts *opts, MPI_Comm comm);
/* Keeps this rank's share of a dataset, in place: call it after eval negatives and validation
   are drawn, and after ncf_model_set_ids (which needs every user's rated items). On failure the
   dataset is unchanged. */
NCFDEF int ncf_mpi_shard(ncf_dataset *ds, MPI_Comm comm);
/* ncf_train_epoch over the ranks, with a sampler on this rank's shard; at the end every rank's
   copy of the model is whole again (ncf_mpi_sync). progress (NULL on the ranks that should not
   print) sees the whole epoch. Each rank's model must be the same at the start: made with the
   same config and seed, or loaded from the same file. */
NCFDEF int ncf_mpi_train_epoch(ncf_model *m, const ncf_sampler *s, int epoch, MPI_Comm comm, ncf_progress_fn progress,
                               void *ctx, double *mean_loss);
/* Part of an epoch, as ncf_train_examples: its examples [first, first + count). Afterwards each
   rank's copy has only its own users' rows up to date: ncf_mpi_evaluate works, and ncf_mpi_sync
   makes the copies whole before anything else (saving, serving, ncf_evaluate refuse until then). */
NCFDEF int ncf_mpi_train_examples(ncf_model *m, const ncf_sampler *s, int epoch, int64_t first, int64_t count,
                                  MPI_Comm comm, ncf_progress_fn progress, void *ctx, double *mean_loss);
/* Copies each rank's users' rows (parameters and Adam moments) to every rank. */
NCFDEF int ncf_mpi_sync(ncf_model *m, const ncf_dataset *shard, MPI_Comm comm);
/* ncf_evaluate over the ranks, each scoring its shard's users: the same figures, bit for
   bit, as one process evaluating the whole data. */
NCFDEF int ncf_mpi_evaluate(ncf_model *m, const ncf_dataset *shard, const ncf_eval_opts *opts, MPI_Comm comm,
                            ncf_metrics *out);
/* Model shards, for models whose users outgrow a machine: a shard holds this rank's users' rows
   only (parameters and Adam moments; its cfg.num_users counts them), the items and dense layers
   whole. It trains and evaluates as a whole model does, to the same bits, and its user rows never
   leave their rank: ncf_mpi_sync has nothing to copy, and what would read other users' rows
   (serving, ncf_save, ncf_evaluate, one-process training) refuses it. ncf_mpi_save writes the
   one-process file; ncf_load reads it back to serve.
   ncf_mpi_model_create: a new shard, each row as ncf_model_create makes it, from the whole data
   or this rank's shard of it (ncf_mpi_shard's, ncf_mpi_load_dataset's), whose ids and every
   user's rated items it keeps for the file (a shard's gathered from the ranks). */
NCFDEF int ncf_mpi_model_create(ncf_model **out, const ncf_config *cfg, const ncf_dataset *data, MPI_Comm comm);
/* A whole model (created, loaded, grown) made this rank's shard in place: the other users' rows
   go. data: the whole data or this rank's shard of it. (It holds the whole model meanwhile: to
   resume from a file on any rank count, ncf_mpi_load reads only this rank's rows.) */
NCFDEF int ncf_mpi_shard_model(ncf_model *m, const ncf_dataset *data, MPI_Comm comm);
/* A file (ncf_save's or ncf_mpi_save's, floats) read as this rank's shard: each rank reads the
   header, ids and rated items, its own users' rows and the items and dense layers, checking the
   file's CRC as it streams past, so no rank holds the other users' rows (POSIX; elsewhere it
   reads the whole file, then keeps its rows). data: the whole data or this rank's shard. */
NCFDEF int ncf_mpi_load(ncf_model **out, const char *path, const ncf_dataset *data, MPI_Comm comm);
/* ncf_save over the ranks: rank 0 writes path, in the one-process format (any rank count and
   one process read it). A shard's user rows travel to rank 0 in pieces of 64k floats (256 KB)
   and are written as they come: no rank holds another's rows whole. A shard refuses
   NCF_SAVE_INT8 (ncf_load the file and ncf_save it int8). */
NCFDEF int ncf_mpi_save(const ncf_model *m, const char *path, int flags, MPI_Comm comm);
#endif

#ifdef __cplusplus
}
#endif
#endif /* NCF_H_INCLUDED */

/* ==================================================================================================
   >>impl: IMPLEMENTATION, in the order data flows (CONTENTS at the top lists its parts)
   ================================================================================================ */
#ifdef NCF_IMPLEMENTATION
#ifndef NCF_IMPLEMENTATION_DONE
#define NCF_IMPLEMENTATION_DONE

/* ---- >>internal (src/internal.h) ------------------------------------------------------------- */

#include <math.h>
#include <stdarg.h>
#include <stdio.h> /* vsnprintf; FILE* only without NCF_NO_STDIO */
#include <stdlib.h>
#include <string.h>
#ifndef NCF_INFERENCE_ONLY
#include <time.h> /* the id tables' secret key */
#endif
#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(_WIN32) && (!defined(NCF_NO_STDIO) || defined(_OPENMP)) /* files; a waiting thread's nap */
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <windows.h>
#endif
#ifndef NCF_NO_STDIO /* what ncf_save needs to write a file safely */
#if defined(_WIN32)
#define NCF__PID() ((uint64_t)GetCurrentProcessId())
#elif defined(__unix__) || defined(__unix) || defined(__APPLE__)
#define NCF__POSIX_FILES 1
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dirent.h>
#include <time.h>
#if defined(NCF_MPI) && !defined(NCF_INFERENCE_ONLY)
#include <sys/mman.h> /* ncf_mpi_load: a rank reads its rows of a file, not the whole file */
#endif
#define NCF__PID() ((uint64_t)getpid())
#else
#define NCF__PID() ((uint64_t)0)
#endif
#endif

#if defined(NCF_MALLOC) && defined(NCF_REALLOC) && defined(NCF_FREE)
#elif !defined(NCF_MALLOC) && !defined(NCF_REALLOC) && !defined(NCF_FREE)
#define NCF_MALLOC(sz) malloc(sz)
#define NCF_REALLOC(p, sz) realloc(p, sz)
#define NCF_FREE(p) free(p)
#else
#error "define all of NCF_MALLOC, NCF_REALLOC and NCF_FREE, or none"
#endif

#ifndef NCF_ASSERT
#ifdef NCF_INFERENCE_ONLY /* a device: no assert text, no stderr */
#define NCF_ASSERT(x) ((void)0)
#else
#include <assert.h>
#define NCF_ASSERT(x) assert(x)
#endif
#endif

/* Bare metal (Cortex-M, a RISC-V microcontroller: an ELF target with no OS) often has no
   thread-local storage runtime, and where the startup code sets up none the first error
   text written faults: there (and on any Cortex-M, whatever its compiler's object format),
   and with NCF_NO_TLS, the error text and the few per-thread statics are plain statics. */
#if defined(__ELF__) && !defined(__unix__) && !defined(__linux__) && !defined(__APPLE__) && !defined(__ANDROID__) && \
    !defined(__Fuchsia__) && !defined(__HAIKU__) && !defined(__wasm__)
#define NCF__BARE_METAL 1
#endif
#if defined(NCF_NO_TLS) || defined(NCF__BARE_METAL) || (defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M')
#define NCF__TLS
#elif defined(__cplusplus) && __cplusplus >= 201103L
#define NCF__TLS thread_local
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__STDC_NO_THREADS__)
#define NCF__TLS _Thread_local
#elif defined(__GNUC__)
#define NCF__TLS __thread
#elif defined(_MSC_VER)
#define NCF__TLS __declspec(thread)
#else
#define NCF__TLS /* no thread-local storage: the error text is shared */
#endif

#ifdef __cplusplus
#define NCF__RESTRICT __restrict
#else
#define NCF__RESTRICT restrict
#endif

#if defined(__GNUC__) || defined(__clang__)
#define NCF__PREFETCH(p) __builtin_prefetch(p)
#else
#define NCF__PREFETCH(p) ((void)0)
#endif
/* Rows ahead that a loop over rows scattered in the tables prefetches: the tables are larger
   than the nearer caches, and a row's misses then overlap the rows before it. Two, not more:
   a wide row is many lines (the MLPerf config's, 12 in each of three arrays), and four rows
   ahead put more misses in flight than a core tracks (1.04-1.10x slower there; the paper
   config's narrow rows run the same at 2 or 4). */
#define NCF__AHEAD 2

/* OpenMP pragmas as macros so that one source serves both builds. */
#ifdef _OPENMP
#define NCF__PRAGMA(x) _Pragma(#x)
#define NCF__OMP(x) NCF__PRAGMA(omp x)
#else
#define NCF__OMP(x)
#endif

/* Work smaller than this many multiply-adds runs on one thread: a parallel
   region costs a few microseconds. */
#define NCF__PAR_WORK 32768.0f /* (scheduling sums are float: no double arithmetic on a device) */

#if defined(__GNUC__) || defined(__clang__)
#define NCF__MAYBE_UNUSED __attribute__((unused)) /* a private call some builds do not make */
#define NCF__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define NCF__MAYBE_UNUSED
#define NCF__PRINTF(f, a)
#endif

#ifndef NCF_NO_STDIO
/* Any file written whole or not at all, as ncf_save writes a model (>>safe-save): the bytes go
   to a new temporary file beside PATH, and PATH changes only at the commit, when the file has
   been flushed to the disk and is renamed over it (an existing file's permissions kept). A
   failed write is kept: later calls return it and the commit removes the temporary file.
   Commit and discard free the ncf__outfile. A killed program's temporary file is removed by
   the next open of the same PATH; no file the library did not make is ever removed. (Private:
   the demo, built with the implementation, writes its CSV, C and log files with it too.) */
typedef struct ncf__outfile ncf__outfile;
static NCF__MAYBE_UNUSED int ncf__outfile_open(ncf__outfile **out, const char *path);
static NCF__MAYBE_UNUSED int ncf__outfile_write(ncf__outfile *out, const void *buf, size_t len);
static NCF__MAYBE_UNUSED NCF__PRINTF(2, 3) int ncf__outfile_printf(ncf__outfile *out, const char *fmt, ...);
static NCF__MAYBE_UNUSED int ncf__outfile_commit(ncf__outfile *out);   /* PATH replaced, or left as it was (an error) */
static NCF__MAYBE_UNUSED void ncf__outfile_discard(ncf__outfile *out); /* PATH left as it was */
/* n outputs as one (a split's files, the embeddings' four): all or none replaced, see file.c */
static NCF__MAYBE_UNUSED int ncf__outfiles_commit(ncf__outfile **out, int n, int rc);
static const char *ncf__os_reason(void); /* the OS's reason for the last failure (file.c) */
#endif

/* Private calls that one stage makes of a later one (one translation unit: any stage may call
   any private function; these are the few that come after their first caller). */
#ifndef NCF_INFERENCE_ONLY
static int ncf__copy_text_ids(const char *text, const int64_t *at, int n, char **out, int64_t **out_at); /* serve */
static int ncf__als_epoch(ncf_model *m, const ncf_dataset *ds, ncf_progress_fn progress, void *ctx, int64_t total,
                          double *mean_loss); /* als */
#endif
static int ncf__build_id_maps(ncf_model *m); /* serve */
#ifndef NCF_INFERENCE_ONLY                   /* features */
struct ncf__features;
static void ncf__features_free(struct ncf__features *F);
static int ncf__has_features(const ncf_model *m);
static int ncf__features_train_on(const ncf_model *m);
static int ncf__features_train(ncf_model *m, const ncf_sampler *smp, int epoch, int64_t first, int64_t end,
                               ncf_progress_fn progress, void *ctx, double *sum);
static size_t ncf__features_state(const ncf_model *m, float **blocks, size_t *sizes); /* 12 blocks */
static int ncf__features_carry(ncf_model *dst, const ncf_model *src);
static int ncf__features_valid(const ncf_features *f, const char *what);
static int ncf__features_average(ncf_model *m, ncf_model *const *models, int n, float row_scale);
static uint64_t ncf__features_bytes(const ncf_model *m);
static void ncf__features_write(const ncf_model *m, uint8_t *p);
static int ncf__features_read(ncf_model *m, const uint8_t *p, uint64_t bytes);
#endif
static void ncf__refresh_gram(ncf_model *m); /* als */

/* ---- >>base (src/base.c) --------------------------------------------------------------------- */
/* ---- >>threads: OpenMP regions, units of work, pacing on a busy machine ---------------------- */
/* Parallel work runs in phases inside one parallel region. A phase is n units that any
   thread may claim; a thread that finds none left waits until every unit is done, not
   until every thread has arrived. So a thread the OS has preempted while holding no unit
   holds nobody up, and the waiting spins only briefly before it sleeps, which frees its
   core for the preempted thread. OpenMP's own barriers cannot do this: they spin for
   milliseconds and need every thread, which on a busy machine cost 2 threads 4x against 1.
   Units write disjoint outputs and every output is summed in a fixed order, so results do
   not depend on which thread ran what, nor on the number of threads. */

/* OpenMP's runtime exits the process when it cannot start a thread a region asks for
   (libgomp: "Thread creation failed", under a small address space or a limit on a user's
   threads), where the library must return. The runtime keeps a region's threads for the
   next region this thread starts, and ends the extra ones when a smaller one runs. So
   before a region that needs more threads than this thread's last one started, the library
   starts the missing ones itself, all at once, with the stack the runtime would give them
   (OMP_STACKSIZE, GOMP_STACKSIZE), ends them, and asks the region for as many as started:
   the same results (see above), never an exit. A team found short is tried again after a
   second, in case the limit has eased. */

#ifdef _OPENMP
/* Regions that asked for a team of more than one thread: what the tests read to see that a
   serving call on the calling thread starts none. */
static long ncf__teams_asked;
#endif

#if defined(_OPENMP) && (defined(__GNUC__) || defined(__clang__)) && (defined(__unix__) || defined(__APPLE__))
#include <pthread.h>
#define NCF__PROBE_MOST 1024 /* threads started by one probe at the most */

static void *ncf__wait_gate(void *gate)
{
    pthread_mutex_lock((pthread_mutex_t *)gate);
    pthread_mutex_unlock((pthread_mutex_t *)gate);
    return NULL;
}

/* The stack size OpenMP's runtime gives its threads: OMP_STACKSIZE, else GOMP_STACKSIZE, a
   number with an optional B, K, M or G (K when none); 0 for the C library's default. */
static size_t ncf__omp_stack_size(void)
{
    const char *s = getenv("OMP_STACKSIZE");
    char *end;
    double v;
    if (!s || !*s) s = getenv("GOMP_STACKSIZE");
    if (!s || !*s || (v = strtod(s, &end)) <= 0) return 0;
    while (*end == ' ' || *end == '\t') end++;
    switch (*end) {
    case 'b':
    case 'B': break;
    case 'm':
    case 'M': v *= 1024.0 * 1024.0; break;
    case 'g':
    case 'G': v *= 1024.0 * 1024.0 * 1024.0; break;
    default: v *= 1024.0;
    }
    return v < 1e15 ? (size_t)v : 0;
}

#include <sys/select.h>
#ifdef __linux__
#include <fcntl.h>
#include <unistd.h>
/* This process's threads, as the kernel counts them (-1: unknown). */
static int ncf__threads_now(void)
{
    char buf[4096], *p;
    int fd = open("/proc/self/status", O_RDONLY), n = -1;
    ssize_t got = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0) close(fd);
    if (got <= 0) return -1;
    buf[got] = 0;
    if ((p = strstr(buf, "\nThreads:")) != NULL) n = atoi(p + 9);
    return n;
}
#else
static int ncf__threads_now(void) { return -1; }
#endif

/* A thread joined can still count against a limit on a user's threads for a moment (the
   join returns before the kernel has released it): after every probe, wait until its threads
   are gone, so the team that follows does not meet the limit in their place (OpenMP's
   runtime exits when it cannot start a thread). A probe that met no limit needs it too: the
   team may need every thread the limit allows, the probe's included. */
static void ncf__await_released(int threads_before)
{
    int tries;
    for (tries = 0; tries < 400 && threads_before > 0 && ncf__threads_now() > threads_before; tries++) {
        struct timeval tv = {0, 250}; /* (at most 0.1 s in all) */
        select(0, NULL, NULL, NULL, &tv);
    }
}

/* How many of n threads can be running at once now (each started, then ended). */
static int ncf__probe_threads(int n)
{
    pthread_t t[NCF__PROBE_MOST];
    pthread_mutex_t gate;
    pthread_attr_t attr;
    size_t stack = ncf__omp_stack_size();
    int k, before = ncf__threads_now(), have_attr = stack && pthread_attr_init(&attr) == 0;
    if (have_attr) pthread_attr_setstacksize(&attr, stack);
    if (pthread_mutex_init(&gate, NULL) != 0) {
        if (have_attr) pthread_attr_destroy(&attr);
        return 0;
    }
    pthread_mutex_lock(&gate); /* held: every thread started waits on it, so all are alive at once */
    for (k = 0; k < n && k < NCF__PROBE_MOST; k++)
        if (pthread_create(&t[k], have_attr ? &attr : NULL, ncf__wait_gate, &gate) != 0) break;
    pthread_mutex_unlock(&gate);
    n = k;
    for (k = 0; k < n; k++) pthread_join(t[k], NULL);
    pthread_mutex_destroy(&gate);
    if (have_attr) pthread_attr_destroy(&attr);
    ncf__await_released(before);
    return n;
}

/* The team a region that wants `want` threads (when cond holds; else 1) can have: at most
   as many as can start. */
static int ncf__team_of(int cond, int want)
{
    static NCF__TLS int pool = 1;       /* threads the runtime holds for this thread's regions */
    static NCF__TLS int short_want;     /* a team found short: its size, */
    static NCF__TLS double short_until; /* and until when to believe it */
    int got;
    if (!cond || want <= 1) return 1; /* one thread: the runtime keeps its pool as it is */
    __atomic_fetch_add(&ncf__teams_asked, 1, __ATOMIC_RELAXED);
    if (want <= pool) return pool = want; /* (a smaller team ends the extra threads) */
    if (want == short_want && omp_get_wtime() < short_until) return pool;
    got = pool + ncf__probe_threads(want - pool);
    short_want = got < want ? want : 0, short_until = omp_get_wtime() + 1.0;
    return pool = got;
}
#else
#define ncf__team_of(cond, want) ((cond) && (want) > 1 ? (ncf__teams_asked++, (want)) : 1)
#endif
#define ncf__team(cond) ncf__team_of((cond), omp_get_max_threads())

#if defined(_OPENMP) && (defined(__GNUC__) || defined(__clang__))
#define NCF__TEAMS 1
#define NCF__PARALLEL(cond) NCF__OMP(parallel num_threads(ncf__team(cond)))
#define NCF__PARALLEL_N(cond, n) NCF__OMP(parallel num_threads(ncf__team_of((cond), (n))))
#if defined(_WIN32)
#define NCF__NAP(us) Sleep((us) >= 1000 ? 1 : 0)
#elif defined(__unix__) || defined(__unix) || defined(__APPLE__)
#include <sys/select.h>
#define NCF__NAP(us) \
    do { \
        struct timeval ncf__tv = {0, (us)}; \
        select(0, NULL, NULL, NULL, &ncf__tv); \
    } while (0)
#else
#define NCF__NAP(us) ((void)0)
#endif
#if defined(__x86_64__) || defined(__i386__)
#define NCF__RELAX() __builtin_ia32_pause()
#elif defined(__aarch64__) || defined(__arm__)
#define NCF__RELAX() __asm__ __volatile__("yield")
#else
#define NCF__RELAX() ((void)0)
#endif
#else /* no OpenMP, or no atomics to build the phases on: one thread */
#define NCF__TEAMS 0
#define NCF__PARALLEL(cond) (void)(cond);
#define NCF__PARALLEL_N(cond, n) (void)(cond), (void)(n);
#endif

#ifdef __cplusplus
#define NCF__TEAM_INIT \
    { \
    } /* (C++ warns of the fields {0} leaves out) */
#else
#define NCF__TEAM_INIT \
    { \
        0 \
    }
#endif
/* Whether more threads pay on this machine now. On a busy machine a thread that shares its
   core, or that the OS preempted holding a unit, is slow, and every phase waits for its last
   unit: 2 threads can train slower than 1. So training measures itself now and then: a
   probe (NCF__PROBE_US, and NCF__PROBE_PHASES at least) with thread 0 working alone, one with
   all, twice over, and it keeps whichever was faster, probing again after NCF__PACE_FIRST_US,
   and after twice as long each time the choice stands, up to NCF__PACE_MOST_US. Results do
   not depend on it. Times in microseconds. */
#define NCF__PROBE_US 25000
#define NCF__PROBE_PHASES 10
#define NCF__PACE_FIRST_US 1000000
#define NCF__PACE_MOST_US 16000000
/* A waiting thread spins NCF__SPIN_US, then naps NCF__NAP_US at a time; a thread sitting out
   naps NCF__SITTING_OUT_US at a time: it must not wake often on a core that thread 0 may need. */
#define NCF__SPIN_US 50
#define NCF__NAP_US 50
#define NCF__SITTING_OUT_US 1000
typedef struct {
    int solo;            /* the current choice: thread 0 alone */
    int probing;         /* 0 running the choice; 1..4 timing alone, all, alone, all */
    int64_t phases;      /* phases thread 0 has finished */
    int64_t next, every; /* microseconds: when to probe next, and the interval */
    int64_t t0, p0;      /* when and at which phase the current timing began */
    double us[2], n[2];  /* microseconds and phases timed alone [0] and with all [1] */
} ncf__pace;

typedef struct {
    int64_t claimed; /* units handed out over all the region's phases so far */
    char pad[64];    /* (each counter on its own cache line) */
    int64_t done;    /* units finished */
    char pad2[64];
    int solo;        /* set: only thread 0 takes units */
    ncf__pace *pace; /* set (training): thread 0 measures which is faster */
} ncf__team;

typedef struct {
    ncf__team *team; /* NULL: this thread works alone */
    int T, tid;      /* threads in the region, and this one */
    int64_t base;    /* the current phase's first unit, counted over the region */
    int64_t pending; /* units claimed and not yet reported done */
} ncf__ctx;

/* This thread's context in the region sharing *team (or outside any region). */
static ncf__ctx ncf__join(ncf__team *team)
{
    ncf__ctx x;
    x.team = NULL, x.T = 1, x.tid = 0, x.base = x.pending = 0;
#if NCF__TEAMS
    x.T = omp_get_num_threads(), x.tid = omp_get_thread_num();
    if (x.T > 1) x.team = team;
#endif
    (void)team;
    return x;
}

#if NCF__TEAMS
/* Until the region has finished `end` units: spins, then naps (NCF__SPIN_US, NCF__NAP_US). */
static void ncf__wait_done(ncf__team *t, int64_t end, int sitting_out)
{
    double t0 = 0;
    int spins = 0;
    while (__atomic_load_n(&t->done, __ATOMIC_ACQUIRE) < end) {
        if (sitting_out) NCF__NAP(NCF__SITTING_OUT_US);
        else if ((++spins & 63) == 0) {
            double now = omp_get_wtime();
            if (t0 == 0) t0 = now;
            else if (now - t0 > NCF__SPIN_US * 1e-6) NCF__NAP(NCF__NAP_US);
        }
        NCF__RELAX();
    }
}

/* Thread 0 at the end of each phase: the measurements of ncf__pace. */
static void ncf__pace_phase(ncf__team *t)
{
    ncf__pace *p = t->pace;
    int64_t now = (int64_t)(omp_get_wtime() * 1e6), n = ++p->phases - p->p0;
    int alone;
    if (!p->probing) {
        if (now < p->next) return;
        p->us[0] = p->us[1] = p->n[0] = p->n[1] = 0;
    } else {
        if (n < NCF__PROBE_PHASES || now - p->t0 < NCF__PROBE_US) return;
        p->us[p->probing % 2 == 0] += (double)(now - p->t0), p->n[p->probing % 2 == 0] += (double)n;
    }
    if (p->probing < 4) { /* the next timing: odd alone, even with all */
        p->probing++, p->t0 = now, p->p0 = p->phases;
        __atomic_store_n(&t->solo, p->probing % 2, __ATOMIC_RELAXED);
        return;
    }
    alone = p->us[0] / p->n[0] < p->us[1] / p->n[1];
    p->every = alone == p->solo && p->every ? (2 * p->every < NCF__PACE_MOST_US ? 2 * p->every : NCF__PACE_MOST_US)
                                            : NCF__PACE_FIRST_US;
    p->solo = alone, p->probing = 0, p->next = now + p->every;
    __atomic_store_n(&t->solo, p->solo, __ATOMIC_RELAXED);
}
#endif

/* Hands this thread the next units [*lo, *hi) of a phase of n units (at least `grain` at a
   time, fewer as the phase runs out, so threads finish together), reporting its previous
   ones done. Returns 0 when none are left, once the whole phase is done. A thread working
   alone, or thread 0 while the others sit out, gets all that is left at once. Each claim
   moves the shared counters' cache lines between cores, a round trip of about 0.1 us on the
   project's VM, or 0.4 us while its host has put the two cores far apart (both seen within
   minutes). So a claim takes half of a thread's share of what is left, not a quarter: the
   paper's model claims 35 times a step instead of 58, 1.03-1.07x as fast on 2 threads (AMD
   EPYC, in turn); and thread 0 alone claims once a phase, not 19 times: 0.99x of one
   thread's pace where it was 0.91-0.94x. */
static int ncf__claim(ncf__ctx *x, int64_t n, int64_t grain, int64_t *lo, int64_t *hi)
{
#if NCF__TEAMS
    ncf__team *t = x->team;
    if (t) {
        int64_t end = x->base + n, c;
        int solo, out;
        if (x->pending) __atomic_fetch_add(&t->done, x->pending, __ATOMIC_RELEASE), x->pending = 0;
        c = __atomic_load_n(&t->claimed, __ATOMIC_RELAXED);
        solo = __atomic_load_n(&t->solo, __ATOMIC_RELAXED);
        out = x->tid != 0 && solo;
        while (c < end && !out) {
            int64_t take = solo ? end - c : (end - c) / (2 * x->T);
            take = take < grain ? grain : take;
            take = take > end - c ? end - c : take;
            if (__atomic_compare_exchange_n(&t->claimed, &c, c + take, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
                *lo = c - x->base, *hi = c + take - x->base, x->pending = take;
                return 1;
            }
        }
        ncf__wait_done(t, end, out);
        x->base = end;
        if (x->tid == 0 && t->pace) ncf__pace_phase(t);
        return 0;
    }
#endif
    (void)grain;
    if (x->pending || n <= 0) return (int)(x->pending = 0);
    *lo = 0, *hi = n, x->pending = n;
    return 1;
}

#ifndef NCF_INFERENCE_ONLY
/* Sets bits in a flag shared by the region's threads. */
static void ncf__flag(int *f, int bits)
{
#if NCF__TEAMS
    __atomic_fetch_or(f, bits, __ATOMIC_RELAXED);
#else
    *f |= bits;
#endif
}
#endif

/* ---- >>errors: messages with file:line, numbers and fields shown safely ---------------------- */

/* Room for a message about a path as long as the OS takes (4096), and its reason; a device
   keeps its RAM. */
#ifdef NCF_INFERENCE_ONLY
#define NCF__ERR_BYTES 512
#else
#define NCF__ERR_BYTES 4608
#endif
static NCF__TLS char ncf__errbuf[NCF__ERR_BYTES];

/* The error text, as printf would write it; one cut short ends in "..." rather than passing for
   whole. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 1, 2)))
#endif
static void
ncf__say(const char *fmt, ...)
{
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(ncf__errbuf, sizeof ncf__errbuf, fmt, ap);
    va_end(ap);
    if (n >= (int)sizeof ncf__errbuf) memcpy(ncf__errbuf + sizeof ncf__errbuf - 4, "...", 4);
}
/* Sets the error text and is the code: "return ncf__fail(NCF_ERR_ARG, ...)". A macro so that the
   code is seen where it is returned, by the compiler and the analyzers alike. */
#define ncf__fail(code, ...) (ncf__say(__VA_ARGS__), (code))

/* Puts "prefix: " before the last error text, in place (no copy on the stack: a device's is
   small), and passes its code on. */
static NCF__MAYBE_UNUSED int ncf__prefix_error(int rc, const char *prefix)
{
    size_t p = strlen(prefix), n = strlen(ncf__errbuf), room = sizeof ncf__errbuf - 1;
    if (p + 2 > room) p = room - 2;
    if (n > room - p - 2) n = room - p - 2;
    memmove(ncf__errbuf + p + 2, ncf__errbuf, n);
    memcpy(ncf__errbuf, prefix, p);
    ncf__errbuf[p] = ':', ncf__errbuf[p + 1] = ' ', ncf__errbuf[p + 2 + n] = 0;
    return rc;
}

/* A number for an error message: newlib-nano's printf (small devices) has no %lld. Two
   slots, so one message can show two. */
static const char *ncf__u64s(uint64_t v, int slot)
{
    static NCF__TLS char buf[2][24];
    char *p = buf[slot & 1] + 23;
    *p = 0;
    do *--p = (char)('0' + (int)(v % 10));
    while (v /= 10);
    return p;
}

static const char *ncf__i64s(int64_t v, int slot)
{
    char *p;
    if (v >= 0) return ncf__u64s((uint64_t)v, slot);
    p = (char *)ncf__u64s(0 - (uint64_t)v, slot) - 1;
    *p = '-';
    return p;
}

/* A field as text for an error message: up to 160 characters, invisible bytes as \xNN. */
static const char *ncf__shown(const char *s, const char *e)
{
    static NCF__TLS char out[4 * 40 + 1];
    static const char hex[] = "0123456789ABCDEF";
    char *o = out;
    for (; s < e && o - out < (ptrdiff_t)sizeof out - 4; s++) { /* (room for one more \xNN and the 0) */
        unsigned char c = (unsigned char)*s;
        if (c >= 32 && c < 127) *o++ = (char)c;
        else *o++ = '\\', *o++ = 'x', *o++ = hex[c >> 4], *o++ = hex[c & 15];
    }
    *o = 0;
    return out;
}

NCFDEF const char *ncf_error_text(void) { return ncf__errbuf; }
NCFDEF const char *ncf_version(void) { return NCF_VERSION_STRING; }

/* The threads the library's parallel work uses (1 without OpenMP). */
static int ncf__threads(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

NCFDEF int ncf_set_threads(int n)
{
#ifdef _OPENMP
    int most = omp_get_thread_limit() < NCF_MAX_THREADS ? omp_get_thread_limit() : NCF_MAX_THREADS;
    if (n > 0) omp_set_num_threads(n < most ? n : most);
#else
    (void)n;
#endif
    return ncf__threads();
}

/* ---- >>memory: allocation, non-finite values, whole files read ------------------------------- */

/* n*size bytes, or NULL when that overflows or the allocator fails. */
static void *ncf__alloc(size_t n, size_t size)
{
    if (!n || !size) return NCF_MALLOC(1); /* an empty array is still a pointer to free */
    return n > (size_t)-1 / size ? NULL : NCF_MALLOC(n * size);
}

static void *ncf__zalloc(size_t n, size_t size)
{
    void *p = ncf__alloc(n, size);
    if (p) memset(p, 0, n * size);
    return p;
}

#define NCF__NEW(T, n) ((T *)ncf__alloc((size_t)(n), sizeof(T)))
/* Frees what p points to and forgets it. A helper that fails leaves every pointer it gave its
   caller NULL this way, so the caller's own clean-up can never free a block twice. */
#define NCF__DROP(p) (NCF_FREE(p), (p) = NULL)
#define NCF__ZNEW(T, n) ((T *)ncf__zalloc((size_t)(n), sizeof(T)))

/* x - x is 0 for a finite float and NaN for an infinite or NaN one. */
#define NCF__NONFINITE(x) (!((x) - (x) == 0.0f))

/* Index of the first non-finite value of p[0..n), or n. */
static size_t ncf__first_nonfinite(const float *p, size_t n)
{
    size_t i;
    for (i = 0; i < n && !NCF__NONFINITE(p[i]); i++) {}
    return i;
}

/* The largest parameter a file may hold (an int8 row's scale times 127 included, read in place
   or copied alike): training never comes near it, and one past it makes scores infinite. An
   Adam moment (a squared gradient) may be larger, but finite. */
#define NCF__MAX_PARAM 1e6f
#define NCF__MAX_MOMENT 1e15f
#define NCF__MAX_CONFIDENCE 1e9 /* a positive's weight at most: one weighing more swamps a batch */

/* Index of the first value of p[0..n) that is not finite or not below most in size, or n. */
static size_t ncf__first_implausible(const float *p, size_t n, float most)
{
    size_t i;
    for (i = 0; i < n && p[i] < most && p[i] > -most; i++) {}
    return i;
}

#ifndef NCF_NO_STDIO
/* Reads a whole file, NUL-terminated. A pipe is read to its end; a directory or a device (which
   may never end: /dev/zero) is refused. With magic (4 bytes), a file that does not start with
   it is refused as soon as its first bytes are in, before the rest is read. */
static int ncf__read_file(const char *path, char **out, size_t *len, const char *magic)
{
    FILE *f;
    size_t cap = 1 << 20, n = 0, got;
    char *buf, *nb;
#if defined(NCF__POSIX_FILES)
    struct stat st;
    if (stat(path, &st) == 0 && (S_ISDIR(st.st_mode) || S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)))
        return ncf__fail(NCF_ERR_IO, "%s: is a %s, not a file", path, S_ISDIR(st.st_mode) ? "directory" : "device");
#elif defined(_WIN32)
    DWORD attrs = GetFileAttributesA(path);
    if (attrs != INVALID_FILE_ATTRIBUTES && (attrs & FILE_ATTRIBUTE_DIRECTORY))
        return ncf__fail(NCF_ERR_IO, "%s: is a directory, not a file", path);
#endif
    if (!(f = fopen(path, "rb"))) return ncf__fail(NCF_ERR_IO, "%s: cannot open for reading", path);
    buf = (char *)NCF_MALLOC(cap);
    while (buf) {
        got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (magic && (n < 4 || memcmp(buf, magic, 4) != 0)) {
            fclose(f), NCF_FREE(buf);
            return ncf__fail(NCF_ERR_PARSE, "%s: not an ncf.h model file (bad magic)", path);
        }
        if (n + 1 < cap) break;
        nb = (char *)NCF_REALLOC(buf, cap * 2);
        if (!nb) {
            NCF_FREE(buf);
            buf = NULL;
            break;
        }
        buf = nb, cap *= 2;
    }
    if (!buf) {
        fclose(f);
        return ncf__fail(NCF_ERR_NOMEM, "%s: out of memory reading the file", path);
    }
    if (ferror(f)) {
        fclose(f);
        NCF_FREE(buf);
        return ncf__fail(NCF_ERR_IO, "%s: read error", path);
    }
    fclose(f);
    buf[n] = 0;
    *out = buf;
    *len = n;
    return NCF_OK;
}
#endif

/* A model file's numbers, little-endian whatever the machine's order: a writer into a buffer
   sized in advance, and a reader that stops at its end (0). */
typedef struct {
    uint8_t *p;
    size_t at;
} ncf__writer;

static void ncf__put_u32(ncf__writer *w, uint32_t v)
{
    int i;
    for (i = 0; i < 4; i++) w->p[w->at++] = (uint8_t)(v >> (8 * i));
}
static void ncf__put_u64(ncf__writer *w, uint64_t v)
{
    ncf__put_u32(w, (uint32_t)v);
    ncf__put_u32(w, (uint32_t)(v >> 32));
}
static void ncf__put_f32(ncf__writer *w, float f)
{
    uint32_t v;
    memcpy(&v, &f, 4);
    ncf__put_u32(w, v);
}

typedef struct {
    const uint8_t *p;
    size_t at, n;
} ncf__reader;

static int ncf__get_u32(ncf__reader *r, uint32_t *v)
{
    int i;
    if (r->n - r->at < 4) return 0;
    for (*v = 0, i = 0; i < 4; i++) *v |= (uint32_t)r->p[r->at++] << (8 * i);
    return 1;
}
static int ncf__get_u64(ncf__reader *r, uint64_t *v)
{
    uint32_t lo, hi;
    if (!ncf__get_u32(r, &lo) || !ncf__get_u32(r, &hi)) return 0;
    *v = (uint64_t)hi << 32 | lo;
    return 1;
}
static int ncf__get_f32(ncf__reader *r, float *f)
{
    uint32_t v;
    if (!ncf__get_u32(r, &v)) return 0;
    memcpy(f, &v, 4);
    return 1;
}

/* ---- >>sort: the one binary search, and sorts in O(n log n) whatever the order --------------- */

/* The one binary search: lo = the first index in [0, n) of type T where below, an expression
   of mid true on a prefix of the indices and false after it, is false (n when it never is).
   It halves without a branch on below (a conditional move): on a random probe, as the sampler's
   into a user's items, a branch would be mispredicted half the time, ~15 cycles a probe. */
#define NCF__FIRST_NOT(T, lo, n, below) \
    do { \
        T n_ = (n), mid; \
        (lo) = 0; \
        if (n_ > 0) { \
            for (; n_ > 1; n_ -= n_ / 2) { \
                mid = (lo) + n_ / 2; \
                (lo) = (below) ? mid : (lo); \
            } \
            mid = (lo); \
            (lo) += (below) ? 1 : 0; \
        } \
    } while (0)

/* The r-th (0-based) item absent from the sorted list p[0..d): the count k of
   entries with p[k] - k <= r is monotone, so binary search finds it exactly. */
static int64_t ncf__nth_absent(const int32_t *p, int64_t d, int64_t r)
{
    int64_t lo;
    NCF__FIRST_NOT(int64_t, lo, d, p[mid] - mid <= r);
    return r + lo;
}

static int ncf__cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Sorting what a file or a caller gave: qsort may be a quicksort that input chosen against it
   drives to n^2 (newlib's, older C libraries'), so every sort here is O(n log n) whatever the
   order: a merge sort (ncf__sort), or the in-place heapsort where no scratch memory can be had,
   where a call must not allocate (serving's lists, in workspace forms) and on a device. Every
   comparison used is a total order, so both give the same result as any correct sort. */
typedef int (*ncf__cmp_fn)(const void *, const void *);

static void ncf__swap_bytes(char *a, char *b, size_t size)
{
    while (size--) {
        char t = *a;
        *a++ = *b, *b++ = t;
    }
}

static void ncf__sift_down(char *v, size_t root, size_t n, size_t size, ncf__cmp_fn cmp)
{
    size_t child;
    while ((child = 2 * root + 1) < n) {
        if (child + 1 < n && cmp(v + child * size, v + (child + 1) * size) < 0) child++;
        if (cmp(v + root * size, v + child * size) >= 0) return;
        ncf__swap_bytes(v + root * size, v + child * size, size);
        root = child;
    }
}

static void ncf__heap_sort(char *v, size_t n, size_t size, ncf__cmp_fn cmp)
{
    size_t k;
    for (k = n / 2; k-- > 0;) ncf__sift_down(v, k, n, size, cmp);
    for (k = n; k-- > 1;) ncf__swap_bytes(v, v + k * size, size), ncf__sift_down(v, 0, k, size, cmp);
}

#ifndef NCF_INFERENCE_ONLY
/* Sorts v[0..n) with tmp[n] as scratch: runs of 8 by insertion, then merged bottom-up. */
static void ncf__merge_sort(char *v, char *tmp, size_t n, size_t size, ncf__cmp_fn cmp)
{
    char *src = v, *dst = tmp;
    size_t width, lo, i, j;
    for (lo = 0; lo < n; lo += 8)
        for (i = lo + 1; i < n && i < lo + 8; i++)
            for (j = i; j > lo && cmp(v + (j - 1) * size, v + j * size) > 0; j--)
                ncf__swap_bytes(v + (j - 1) * size, v + j * size, size);
    for (width = 8; width < n; width *= 2) {
        for (lo = 0; lo < n; lo += 2 * width) {
            size_t mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n, a = lo, b = mid,
                   o = lo;
            while (a < mid && b < hi) {
                size_t from = cmp(src + b * size, src + a * size) < 0 ? b++ : a++;
                memcpy(dst + o++ * size, src + from * size, size);
            }
            memcpy(dst + o * size, src + a * size, (mid - a) * size), o += mid - a;
            memcpy(dst + o * size, src + b * size, (hi - b) * size);
        }
        {
            char *t = src;
            src = dst, dst = t;
        }
    }
    if (src != v) memcpy(v, src, n * size);
}

static void ncf__sort(void *v, size_t n, size_t size, ncf__cmp_fn cmp)
{
    char *tmp;
    if (n < 2) return;
    if (n <= 8 || !(tmp = (char *)ncf__alloc(n, size))) {
        ncf__heap_sort((char *)v, n, size, cmp);
        return;
    }
    ncf__merge_sort((char *)v, tmp, n, size, cmp);
    NCF_FREE(tmp);
}
#else /* a device sorts only small lists and a model's ids once: the heapsort, in place */
#define ncf__sort(v, n, size, cmp) ncf__heap_sort((char *)(v), (n), (size), (cmp))
#endif

/* ceil(a / b) for a >= 0, b > 0: how many units of b cover a. (A macro: a divisor that is a
   constant stays a multiply where a call would divide, as a small core's -Os build would.) */
#define NCF__CEIL_DIV(a, b) (((a) + (b)-1) / (b))

/* ---- >>rng: counter-based random numbers ----------------------------------------------------- */
/* Counter-based: a value is a pure function of its key, so parallel loops draw
   the same numbers in any schedule. splitmix64's finalizer does the mixing. (Serving draws
   the negatives of a fold-in only.) */
static uint64_t ncf__mix64(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t ncf__hash3(uint64_t seed, uint64_t a, uint64_t b)
{
    return ncf__mix64(ncf__mix64(ncf__mix64(seed) ^ a) ^ b);
}

/* Streams of one seed, kept apart by a tag. */
enum {
    NCF__TAG_INIT = 1,
    NCF__TAG_SHUFFLE,
    NCF__TAG_NEG,
    NCF__TAG_EVAL,
    NCF__TAG_SYNTH,
    NCF__TAG_VAL,
    NCF__TAG_VALNEG,
    NCF__TAG_FULL,
    NCF__TAG_HOLDOUT,
    NCF__TAG_FOLD,
    NCF__TAG_TUNE,
    NCF__TAG_FEATURES,
    NCF__TAG_COLD
};

/* Uniform in [0, n) from 32 random bits (Lemire); bias < n / 2^32. */
static uint32_t ncf__below(uint64_t x, uint32_t n) { return (uint32_t)(((x >> 32) * (uint64_t)n) >> 32); }

#ifndef NCF_INFERENCE_ONLY

static double ncf__uniform(uint64_t x) { return (double)(x >> 11) * (1.0 / 9007199254740992.0); }

typedef struct {
    uint64_t state;
} ncf__rng;

static uint64_t ncf__next(ncf__rng *r) { return ncf__mix64(r->state++); }

#endif /* NCF_INFERENCE_ONLY */

/* ---- >>ids (src/ids.c) ----------------------------------------------------------------------- */
/* Id tables as written: lookup by bisection, names, checks. */

#define NCF__MAX_RAW_ID ((int64_t)1 << 62) /* raw ids are in [0, 2^62) */

/* Ids as the user's file wrote them. A table is integers ascending (num, read through order
   when they were given out of order) or text ascending by bytes (at, text), so any id is
   found by bisection, with no hash map: lookups write nothing, and a table read in place from
   flash costs no memory. */
typedef struct {
    int n;
    const int64_t *num;   /* integer ids, or NULL */
    const int32_t *order; /* num's indices in ascending id order, or NULL: num ascends */
    const char *text;     /* text ids back to back, or NULL */
    const int64_t *at;    /* [n+1] where id k's bytes start in text */
} ncf__ids;

/* Where id sits in raw[] read in ascending order (raw[order[k]], or raw[k] when order is
   NULL): its index in raw[], or -1 when it is absent. */
static int ncf__find_id(const int64_t *raw, const int32_t *order, int n, int64_t id)
{
    int lo;
    NCF__FIRST_NOT(int, lo, n, raw[order ? order[mid] : mid] < id);
    return lo < n && raw[order ? order[lo] : lo] == id ? (order ? order[lo] : lo) : -1;
}

/* The byte order of text ids: memcmp's, a prefix first. */
static int ncf__cmp_text(const char *a, size_t na, const char *b, size_t nb)
{
    int c = memcmp(a, b, na < nb ? na : nb);
    return c ? c : (na > nb) - (na < nb);
}

/* 1 and *v when [s, e) is a plain integer: digits, no sign, no leading zero, below 2^62 (the
   ids kept as numbers: their decimal form gives back the bytes as written). */
static int ncf__plain_int(const char *s, const char *e, int64_t *v)
{
    uint64_t x = 0;
    if (s == e || e - s > 19 || (*s == '0' && e - s > 1)) return 0;
    for (; s < e; s++) {
        if (*s < '0' || *s > '9') return 0;
        x = x * 10 + (uint64_t)(*s - '0');
    }
    if (x >= (uint64_t)NCF__MAX_RAW_ID) return 0;
    *v = (int64_t)x;
    return 1;
}

/* Where the text id [s, s+len) is in t, or -1. */
static int ncf__find_text(const ncf__ids *t, const char *s, size_t len)
{
    int lo;
    NCF__FIRST_NOT(int, lo, t->n,
                   ncf__cmp_text(t->text + t->at[mid], (size_t)(t->at[mid + 1] - t->at[mid]), s, len) < 0);
    return lo < t->n && !ncf__cmp_text(t->text + t->at[lo], (size_t)(t->at[lo + 1] - t->at[lo]), s, len) ? lo : -1;
}

/* The index of id [s, s+len) as written, or -1 (also for a table that holds no ids). */
static int ncf__ids_find(const ncf__ids *t, const char *s, size_t len)
{
    int64_t v;
    if (t->text) return ncf__find_text(t, s, len);
    return t->num && ncf__plain_int(s, s + len, &v) ? ncf__find_id(t->num, t->order, t->n, v) : -1;
}

/* The index of an integer id: a text table is searched for its decimal form. */
static int ncf__ids_find_int(const ncf__ids *t, int64_t v)
{
    const char *d;
    if (!t->text) return t->num ? ncf__find_id(t->num, t->order, t->n, v) : -1;
    d = ncf__i64s(v, 1);
    return ncf__find_text(t, d, strlen(d));
}

/* Id k NUL-terminated into buf: its length, or -1 (k out of range, no ids, buf too short),
   buf then "" (a caller that skips the check prints nothing, never old bytes). */
static int ncf__ids_name(const ncf__ids *t, int k, char *buf, size_t size)
{
    const char *s;
    size_t n;
    if (buf && size) buf[0] = 0;
    if (k < 0 || k >= t->n || !buf || (!t->text && !t->num)) return -1;
    if (t->text) s = t->text + t->at[k], n = (size_t)(t->at[k + 1] - t->at[k]);
    else s = ncf__i64s(t->num[k], 1), n = strlen(s);
    if (n >= size) return -1;
    memcpy(buf, s, n), buf[n] = 0;
    return (int)n;
}

static int ncf__index_of(ncf__ids t, const char *id, const char *what)
{
    int k = id ? ncf__ids_find(&t, id, strlen(id)) : -1;
    return k >= 0 ? k
                  : ncf__fail(NCF_ERR_ARG, "unknown %s '%s'", what, id ? ncf__shown(id, id + strlen(id)) : "(null)");
}

static int ncf__name_of(ncf__ids t, int k, char *buf, size_t size, const char *what)
{
    int n = ncf__ids_name(&t, k, buf, size);
    if (n >= 0) return n;
    return ncf__fail(NCF_ERR_ARG,
                     k < 0 || k >= t.n ? "%s index %d is not in [0, %d)" : "%s %d: no ids, or the buffer is too short",
                     what, k, t.n);
}

/* Checks a text table read from a file: offsets from 0 to bytes, each id non-empty, at most
   NCF_MAX_ID_BYTES, without NUL, in strictly ascending order (so each is there once). */
static int ncf__check_text_ids(const ncf__ids *t, uint64_t bytes, const char *what)
{
    int k;
    if (t->at[0] != 0 || (uint64_t)t->at[t->n] != bytes)
        return ncf__fail(NCF_ERR_PARSE, "model's %s id offsets do not add up", what);
    for (k = 0; k < t->n; k++) {
        int64_t a = t->at[k], b = t->at[k + 1];
        if (b <= a || b - a > NCF_MAX_ID_BYTES || (uint64_t)b > bytes || memchr(t->text + a, 0, (size_t)(b - a)))
            return ncf__fail(NCF_ERR_PARSE, "model's %s id %d is empty, too long or malformed", what, k);
        if (k && ncf__cmp_text(t->text + t->at[k - 1], (size_t)(a - t->at[k - 1]), t->text + a, (size_t)(b - a)) >= 0)
            return ncf__fail(NCF_ERR_PARSE, "model's %s ids do not ascend (at %d)", what, k);
    }
    return NCF_OK;
}

/* "user" or "item", for messages. */
static const char *ncf__side_name(int side) { return side == NCF_ITEM ? "item" : "user"; }

#ifndef NCF_INFERENCE_ONLY
static ncf__ids ncf__dataset_ids(const ncf_dataset *ds, int items)
{
    ncf__ids t;
    t.n = items ? ds->num_items : ds->num_users;
    t.num = items ? ds->raw_item : ds->raw_user, t.order = NULL;
    t.text = items ? ds->item_text : ds->user_text;
    t.at = items ? ds->item_text_at : ds->user_text_at;
    return t;
}

NCFDEF int ncf_dataset_find(const ncf_dataset *ds, int side, const char *id)
{
    if (!ds || (side != NCF_USER && side != NCF_ITEM))
        return ncf__fail(NCF_ERR_ARG, "ncf_dataset_find: NULL dataset, or a side not NCF_USER or NCF_ITEM");
    return ncf__index_of(ncf__dataset_ids(ds, side), id, ncf__side_name(side));
}
NCFDEF int ncf_dataset_id(const ncf_dataset *ds, int side, int index, char *buf, size_t size)
{
    if (!ds || (side != NCF_USER && side != NCF_ITEM))
        return ncf__fail(NCF_ERR_ARG, "ncf_dataset_id: NULL dataset, or a side not NCF_USER or NCF_ITEM");
    return ncf__name_of(ncf__dataset_ids(ds, side), index, buf, size, ncf__side_name(side));
}
#endif

/* ---- >>logs (src/logs.c) --------------------------------------------------------------------- */
#ifndef NCF_INFERENCE_ONLY /* the whole stage: a device only serves */
/* ---- >>data: datasets: held-out lists, what the parsers hand the build ----------------------- */

NCFDEF ncf_dataset_opts ncf_dataset_opts_default(void)
{
    ncf_dataset_opts o;
    memset(&o, 0, sizeof o);
    o.format = NCF_FORMAT_AUTO;
    o.min_rating = -HUGE_VALF;
    o.alpha = 1.0f;
    o.holdout_fraction = 0.2f;
    return o;
}

NCFDEF void ncf_dataset_free(ncf_dataset *ds)
{
    if (!ds) return;
    NCF_FREE(ds->user_ptr);
    NCF_FREE(ds->items);
    NCF_FREE(ds->train_user);
    NCF_FREE(ds->weight);
    NCF_FREE(ds->test_item);
    NCF_FREE(ds->test_ptr), NCF_FREE(ds->test_items), NCF_FREE(ds->val_ptr), NCF_FREE(ds->val_items);
    NCF_FREE(ds->eval_neg);
    NCF_FREE(ds->raw_user);
    NCF_FREE(ds->raw_item);
    NCF_FREE(ds->recent_item);
    NCF_FREE(ds->val_item);
    NCF_FREE(ds->val_weight);
    NCF_FREE(ds->val_neg);
    NCF_FREE(ds->shard.groups);
    NCF_FREE(ds->user_text);
    NCF_FREE(ds->item_text);
    NCF_FREE(ds->user_text_at);
    NCF_FREE(ds->item_text_at);
    memset(ds, 0, sizeof *ds);
}

/* User u's id for a message (one of two slots, as ncf__i64s). */
static const char *ncf__user_name(const ncf_dataset *ds, int u, int slot)
{
    static NCF__TLS char buf[2][NCF_MAX_ID_BYTES + 1];
    ncf__ids t = ncf__dataset_ids(ds, 0);
    if (ncf__ids_name(&t, u, buf[slot & 1], sizeof buf[0]) < 0) return ncf__i64s(u, slot);
    return buf[slot & 1];
}

/* Allocates the arrays of a dataset whose sizes are set; fills train_user later. */
static int ncf__dataset_alloc(ncf_dataset *ds)
{
    ds->user_ptr = NCF__ZNEW(int64_t, ds->num_users + 1);
    ds->items = NCF__NEW(int32_t, ds->num_train);
    ds->train_user = NCF__NEW(int32_t, ds->num_train);
    ds->test_item = NCF__NEW(int32_t, ds->num_users);
    ds->raw_user = NCF__NEW(int64_t, ds->num_users);
    ds->raw_item = NCF__NEW(int64_t, ds->num_items);
    if (!ds->user_ptr || !ds->items || !ds->train_user || !ds->test_item || !ds->raw_user || !ds->raw_item) {
        ncf_dataset_free(ds);
        return ncf__fail(NCF_ERR_NOMEM, "out of memory for a dataset of %lld positives", (long long)ds->num_train);
    }
    return NCF_OK;
}

static void ncf__fill_train_user(ncf_dataset *ds)
{
    int u;
    NCF__OMP(parallel for schedule(static) num_threads(ncf__team(1)))
    for (u = 0; u < ds->num_users; u++) {
        int64_t k;
        for (k = ds->user_ptr[u]; k < ds->user_ptr[u + 1]; k++) ds->train_user[k] = u;
    }
}

/* The validation item of u, or -1. */
static int32_t ncf__val_of(const ncf_dataset *ds, int u) { return ds->val_item ? ds->val_item[u] : -1; }

/* u's held-out items for the target, ascending, *n of them: either split's. */
static const int32_t *ncf__held_list(const ncf_dataset *d, int target, int u, int64_t *n)
{
    const int64_t *ptr = target == NCF_EVAL_VALIDATION ? d->val_ptr : d->test_ptr;
    const int32_t *one = target == NCF_EVAL_VALIDATION ? d->val_item : d->test_item;
    if (ptr) {
        *n = ptr[u + 1] - ptr[u];
        return (target == NCF_EVAL_VALIDATION ? d->val_items : d->test_items) + ptr[u];
    }
    *n = one && one[u] >= 0;
    return *n ? one + u : NULL;
}

/* Whether the data has validation items (either split's). */
static int ncf__has_val(const ncf_dataset *d) { return d->val_item || d->val_ptr; }

/* Whether the data is a shard of ncf_mpi_shard's (its rows those of some users only): the one
   question the core asks of a shard, besides the offsets of its rows (shard.train_lo, user_lo). */
static int ncf__is_shard(const ncf_dataset *ds) { return ds->shard.total_train != 0; }
/* The positives of the whole data, also for a shard. */
static int64_t ncf__all_train(const ncf_dataset *ds)
{
    return ncf__is_shard(ds) ? ds->shard.total_train : ds->num_train;
}

/* Items u never rated: neither a training positive nor its test or validation item (which
   are kept out of the training list). */
static int64_t ncf__num_unrated(const ncf_dataset *ds, int u)
{
    return ds->num_items - (ds->user_ptr[u + 1] - ds->user_ptr[u]) - (ds->test_item[u] >= 0) -
        (ncf__val_of(ds, u) >= 0);
}

/* Items not in u's training list: what a training negative is drawn from. */
static int64_t ncf__num_untrained(const ncf_dataset *ds, int u)
{
    return ds->num_items - (ds->user_ptr[u + 1] - ds->user_ptr[u]);
}

/* The r-th unrated item of user u, 0 <= r < ncf__num_unrated(ds, u). */
static int32_t ncf__nth_unrated(const ncf_dataset *ds, int u, int64_t r)
{
    const int32_t *p = ds->items + ds->user_ptr[u];
    int64_t d = ds->user_ptr[u + 1] - ds->user_ptr[u];
    int32_t t = ds->test_item[u], v = ncf__val_of(ds, u), lo = t < v ? t : v, hi = t < v ? v : t;
    int64_t x = ncf__nth_absent(p, d, r), skip = 0;
    /* skip over the held-out items (-1: none), the lower first; neither is in p */
    if (lo >= 0 && lo <= x) x = ncf__nth_absent(p, d, r + ++skip);
    if (hi >= 0 && hi <= x) x = ncf__nth_absent(p, d, r + ++skip);
    return (int32_t)x;
}

/* How ncf__build turns parsed interactions into a dataset. */
typedef struct {
    const uint8_t *positive;      /* [n] 0: rated below min_rating; NULL: every line is a positive */
    int min_ratings;              /* drop users with fewer positives */
    int min_item_ratings;         /* drop items with fewer positives from the users kept */
    int kcore;                    /* repeat both until neither drops anything */
    int holdout;                  /* NCF_HOLDOUT_*, or NCF__HOLDOUT_SPLIT */
    uint64_t seed;                /* the random hold-out */
    int fixed_users, fixed_items; /* > 0: ids already dense (the paper split) */
    const double *strength;       /* [n] each line's strength, or NULL: no weighting */
    int weighting;                /* NCF_WEIGHT_* of the strength */
    double alpha;
    ncf_load_report *report; /* filled when not NULL */
    int validation;          /* a split of many items: validation items too, by the same rule */
    double fraction;         /* its share held out (NCF_HOLDOUT_RATIO, _TIME; validation's for _CUTOFF) */
    int64_t cutoff;          /* NCF_HOLDOUT_CUTOFF's */
#ifdef NCF_MPI
    /* The distributed loader's: each rank builds from all the lines of some users, and the
       filters' counts are summed over the ranks (NULL: one process). */
    int (*reduce)(void *ctx, void *v, int64_t n, int op);
    void *ctx;
#endif
} ncf__build_opts;

/* What ncf__build_opts.reduce does to v[n] over the ranks. */
enum { NCF__SUM_I64, NCF__ALL_U8, NCF__ANY_U8, NCF__AGREE };
#ifdef NCF_MPI
#define NCF__REDUCE(bo, v, n, op) ((bo)->reduce ? (bo)->reduce((bo)->ctx, (v), (n), (op)) : NCF_OK)
#else
#define NCF__REDUCE(bo, v, n, op) ((void)(bo), (void)(v), NCF_OK)
#endif

/* The status every rank of a distributed build agrees on (this one's in one process). */
static int ncf__build_agree(const ncf__build_opts *bo, int rc)
{
#ifdef NCF_MPI
    if (bo->reduce) return bo->reduce(bo->ctx, &rc, 1, NCF__AGREE);
#else
    (void)bo;
#endif
    return rc;
}

/* The paper split's test lines: the latest, held out even when it is a user's only line. */
#define NCF__HOLDOUT_SPLIT 99
/* A split of many items per user (NCF_HOLDOUT_RATIO to _SAVED, and _ITEMS). */
#define NCF__MANY(h) (((h) >= NCF_HOLDOUT_RATIO && (h) <= NCF_HOLDOUT_SAVED) || (h) == NCF_HOLDOUT_ITEMS)

/* The dataset from parsed triples: >>split, after the parsers that feed it. */
static int ncf__build(ncf_dataset *ds, const int64_t *users, const int64_t *items, const int64_t *times, int64_t n,
                      const ncf__build_opts *bo);

/* Delimited logs: dialect, columns, records, text ids. */
/* The bytes of a UTF-8 byte order mark at p (3), or 0. */
static size_t ncf__bom_bytes(const char *p, size_t len) { return len >= 3 && !memcmp(p, "\xEF\xBB\xBF", 3) ? 3 : 0; }

/* A log is read from a buffer: its separator, header and columns are found from the first
   records (or given), then every record's ids, rating and timestamp are read. A column whose
   ids are all plain integers keeps them as numbers (the fast path MovieLens takes); the first
   other id turns the column to text and the reading starts over, every distinct text id then
   interned once. Nothing is written into the buffer. */

typedef struct {
    const char *p, *end;
    int64_t line, next;
} ncf__cursor; /* line: the record's */
typedef struct {
    const char *s, *e;
} ncf__span;

#define NCF__MAX_FIELDS 64 /* fields a record keeps; more are counted */

static int ncf__blank(char c) { return c == ' ' || c == '\t'; }

/* Past a line end (LF, CRLF or CR) at p. */
static const char *ncf__past_eol(const char *p, const char *end)
{
    if (p < end && *p == '\r') return p + 1 < end && p[1] == '\n' ? p + 2 : p + 1;
    return p < end && *p == '\n' ? p + 1 : p;
}

/* A quoted field from its opening quote: past its closing quote (separators and line ends
   inside are text), or NULL when the buffer ends first. */
static const char *ncf__past_quoted(ncf__cursor *C, const char *p)
{
    for (p++; p < C->end; p++) {
        if (*p == '"') {
            if (p + 1 < C->end && p[1] == '"') p++;
            else return p + 1;
        } else if (*p == '\n' || (*p == '\r' && !(p + 1 < C->end && p[1] == '\n'))) {
            C->next++;
        }
    }
    return NULL;
}

/* The next record's fields, split at sep outside quotes (which stay: ncf__value removes
   them), up to a line end or the end of the buffer, which it steps over. sep " " is a run of
   blanks. Fields past max are counted, not stored. Returns the count; 0 for a blank line; -1
   at the end; -2 when a quote is still open at the end of the buffer. */
static int ncf__record(ncf__cursor *C, const char *sep, ncf__span *f, int max)
{
    const char *p = C->p, *end = C->end;
    char c0 = sep[0], c1 = sep[1];
    int n = 0, blanks = c0 == ' ';
    if (p >= end) return -1;
    C->line = C->next;
    if (blanks)
        while (p < end && ncf__blank(*p)) p++;
    for (;;) {
        const char *s = p;
        if (p < end && *p == '"' && !(p = ncf__past_quoted(C, p))) {
            C->p = end;
            return -2;
        }
        for (; p < end; p++) {
            char c = *p;
            if (c == '\n' || c == '\r' || (c == c0 && (!c1 || (p + 1 < end && p[1] == c1))) || (blanks && c == '\t'))
                break;
        }
        if (n < max) f[n].s = s, f[n].e = p;
        n++;
        if (p >= end || *p == '\n' || *p == '\r') break;
        p += c1 ? 2 : 1;
        if (blanks) {
            while (p < end && ncf__blank(*p)) p++;
            if (p >= end || *p == '\n' || *p == '\r') break; /* trailing blanks */
        }
    }
    C->p = ncf__past_eol(p, end);
    C->next++;
    if (n == 1) { /* a line of blanks is a blank line */
        const char *q = f[0].s;
        while (q < f[0].e && ncf__blank(*q)) q++;
        if (q == f[0].e) return 0;
    }
    return n;
}

/* A field's value: blanks around it trimmed and, when quoted, the quotes off. *escaped says
   that "" stands inside for a quote (ncf__unescape reads it). */
static ncf__span ncf__value(ncf__span f, int *escaped)
{
    const char *q;
    *escaped = 0;
    while (f.s < f.e && ncf__blank(*f.s)) f.s++;
    while (f.e > f.s && ncf__blank(f.e[-1])) f.e--;
    if (f.e - f.s >= 2 && *f.s == '"' && f.e[-1] == '"') {
        f.s++, f.e--;
        for (q = f.s; q < f.e && !*escaped; q++) *escaped = *q == '"';
    }
    return f;
}

/* A quoted value's bytes with each "" read as one quote, into buf (NCF_MAX_ID_BYTES): the
   length, or -1 when longer. */
static int ncf__unescape(ncf__span v, char *buf)
{
    const char *p;
    int n = 0;
    for (p = v.s; p < v.e; p++) {
        if (*p == '"' && p + 1 < v.e && p[1] == '"') p++;
        if (n == NCF_MAX_ID_BYTES) return -1;
        buf[n++] = *p;
    }
    return n;
}

/* 1 and *v for an integer in (-2^63, 2^63), -1 for one of more digits (too large), else 0. */
static int ncf__int_field(const char *s, const char *e, int64_t *v)
{
    int neg = 0, big = 0;
    uint64_t x = 0;
    if (s < e && (*s == '-' || *s == '+')) neg = *s++ == '-';
    if (s == e) return 0;
    for (; s < e; s++) {
        if (*s < '0' || *s > '9') return 0;
        if (x > (UINT64_MAX - (uint64_t)(*s - '0')) / 10) big = 1; /* keep reading: "12x" is not an integer */
        else x = x * 10 + (uint64_t)(*s - '0');
    }
    if (big || x >= UINT64_C(1) << 63) return -1;
    *v = neg ? -(int64_t)x : (int64_t)x;
    return 1;
}

static int ncf__num_field(const char *s, const char *e)
{
    int digits = 0;
    if (s < e && (*s == '-' || *s == '+')) s++;
    while (s < e && *s >= '0' && *s <= '9') s++, digits++;
    if (s < e && *s == '.')
        for (s++; s < e && *s >= '0' && *s <= '9'; s++) digits++;
    if (digits && s < e && (*s == 'e' || *s == 'E')) {
        s++;
        if (s < e && (*s == '-' || *s == '+')) s++;
        if (s == e) return 0;
        while (s < e && *s >= '0' && *s <= '9') s++;
    }
    return digits > 0 && s == e;
}

/* A number ncf__num_field accepted, as a double (a longer one than 63 characters is 0). */
static double ncf__num_value(ncf__span v)
{
    char tmp[64];
    size_t n = (size_t)(v.e - v.s);
    if (n >= sizeof tmp) return 0;
    memcpy(tmp, v.s, n), tmp[n] = 0;
    return strtod(tmp, NULL);
}

static const char *ncf__sep_name(const char *sep) { return sep[0] == '\t' ? "TAB" : sep[0] == ' ' ? "blanks" : sep; }

/* Growable triples of one file, with whether each is a positive (pos, when min_rating is set)
   and its strength (str, with a weighting). */
typedef struct {
    int64_t *u, *i, *t;
    uint8_t *pos;
    double *str;
    int64_t n, cap;
} ncf__triples;

static void ncf__triples_free(ncf__triples *tr)
{
    NCF_FREE(tr->u);
    NCF_FREE(tr->i);
    NCF_FREE(tr->t);
    NCF_FREE(tr->pos);
    NCF_FREE(tr->str);
    memset(tr, 0, sizeof *tr); /* safe to free twice: a failed parse frees, then its caller */
}

static int ncf__triples_reserve(ncf__triples *tr, int64_t cap, int with_pos, int with_str)
{
    tr->u = NCF__NEW(int64_t, cap);
    tr->i = NCF__NEW(int64_t, cap);
    tr->t = NCF__NEW(int64_t, cap);
    tr->pos = with_pos ? NCF__NEW(uint8_t, cap) : NULL;
    tr->str = with_str ? NCF__NEW(double, cap) : NULL;
    tr->n = 0, tr->cap = cap;
    if (tr->u && tr->i && tr->t && (tr->pos || !with_pos) && (tr->str || !with_str)) return NCF_OK;
    ncf__triples_free(tr);
    return ncf__fail(NCF_ERR_NOMEM, "out of memory for %lld ratings", (long long)cap);
}

/* The distinct text ids of a column in the order first read: open addressing over their bytes.
   The hash is keyed by a secret each table draws (ncf__secret_key): with a fixed key, ids
   chosen so their hashes share low bits would put every insert on one chain, and a log of n
   such ids would take n^2 to read. The key decides only where ids sit in the slots, never
   their numbers, so results do not depend on it. */
typedef struct {
    int32_t *slot; /* [cap] 1 + the id's number; 0: empty */
    int64_t *at;   /* [n + 1] where each id's bytes start in bytes */
    char *bytes;
    int64_t n, at_cap, used, bytes_cap;
    size_t cap;      /* slots: a power of 2, at least twice n */
    uint64_t key;    /* the hash's secret key; 0: not drawn yet */
    uint64_t probes; /* slots looked at, over all lookups (the tests bound it) */
} ncf__intern;

static void ncf__intern_free(ncf__intern *t)
{
    NCF_FREE(t->slot), NCF_FREE(t->at), NCF_FREE(t->bytes);
    memset(t, 0, sizeof *t);
}

/* A key no file can know in advance: the addresses the OS placed this table, this stack and
   this code at (randomized where the OS randomizes them), and the time and CPU clock now. */
static uint64_t ncf__secret_key(const void *salt)
{
    uint64_t h = ncf__mix64((uint64_t)(uintptr_t)salt ^ 0x243F6A8885A308D3ull);
    h = ncf__mix64(h ^ (uint64_t)(uintptr_t)&h);
    h = ncf__mix64(h ^ (uint64_t)(uintptr_t)&ncf__secret_key);
    h = ncf__mix64(h ^ (uint64_t)time(NULL));
    h = ncf__mix64(h ^ (uint64_t)clock());
    return h | 1;
}

static uint64_t ncf__hash_bytes(uint64_t key, const char *p, size_t n)
{
    uint64_t h = key ^ (uint64_t)n, w;
    for (; n >= 8; p += 8, n -= 8) memcpy(&w, p, 8), h = ncf__mix64(h ^ w) + key;
    if (n) w = 0, memcpy(&w, p, n), h = ncf__mix64(h ^ w) + key;
    return ncf__mix64(h ^ (key >> 17));
}

/* Where [s, s+len) sits in the slots: its slot, or the empty one it would take. */
static size_t ncf__intern_slot(ncf__intern *t, const char *s, size_t len)
{
    size_t i = (size_t)ncf__hash_bytes(t->key, s, len) & (t->cap - 1);
    for (;; i = (i + 1) & (t->cap - 1)) {
        int32_t k = t->slot[i] - 1;
        t->probes++;
        if (k < 0 || ((size_t)(t->at[k + 1] - t->at[k]) == len && !memcmp(t->bytes + t->at[k], s, len))) return i;
    }
}

/* Room for one more id of len bytes: twice the slots, the offsets or the bytes when full. */
static int ncf__intern_room(ncf__intern *t, size_t len)
{
    if ((size_t)(t->n + 1) * 2 > t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 1024;
        if (!t->key) t->key = ncf__secret_key(t);
        int32_t *old = t->slot, k;
        if (!(t->slot = NCF__ZNEW(int32_t, cap))) {
            t->slot = old;
            return 0;
        }
        t->cap = cap;
        for (k = 0; k < t->n; k++)
            t->slot[ncf__intern_slot(t, t->bytes + t->at[k], (size_t)(t->at[k + 1] - t->at[k]))] = k + 1;
        NCF_FREE(old);
    }
    if (t->n + 2 > t->at_cap) {
        int64_t cap = t->at_cap ? 2 * t->at_cap : 1024,
                *at = (int64_t *)NCF_REALLOC(t->at, sizeof(int64_t) * (size_t)cap);
        if (!at) return 0;
        if (!t->at_cap) at[0] = 0;
        t->at = at, t->at_cap = cap;
    }
    if (t->used + (int64_t)len > t->bytes_cap) {
        int64_t cap = t->bytes_cap ? 2 * t->bytes_cap : 16384;
        char *b;
        while (cap < t->used + (int64_t)len) cap *= 2;
        if (!(b = (char *)NCF_REALLOC(t->bytes, (size_t)cap))) return 0;
        t->bytes = b, t->bytes_cap = cap;
    }
    return 1;
}

/* The number of id [s, s+len), added when new; -1 out of memory. */
static int64_t ncf__intern_add(ncf__intern *t, const char *s, size_t len)
{
    size_t i;
    if (t->cap && t->slot[i = ncf__intern_slot(t, s, len)]) return t->slot[i] - 1;
    if (t->n >= INT32_MAX - 1 || !ncf__intern_room(t, len)) return -1;
    i = ncf__intern_slot(t, s, len);
    memcpy(t->bytes + t->used, s, len);
    t->used += (int64_t)len;
    t->at[t->n + 1] = t->used;
    t->slot[i] = (int32_t)(t->n + 1);
    return t->n++;
}

typedef struct {
    const char *p;
    int64_t len, num;
    int32_t src;
} ncf__idkey;

static int ncf__cmp_idkey_num(const void *a, const void *b)
{
    int64_t x = ((const ncf__idkey *)a)->num, y = ((const ncf__idkey *)b)->num;
    return (x > y) - (x < y);
}

static int ncf__cmp_idkey_text(const void *a, const void *b)
{
    const ncf__idkey *x = (const ncf__idkey *)a, *y = (const ncf__idkey *)b;
    return ncf__cmp_text(x->p, (size_t)x->len, y->p, (size_t)y->len);
}

/* The interned ids in byte order (text, at) and each one's place in it (rank[k]). */
static int ncf__intern_sort(const ncf__intern *t, char **text, int64_t **at, int64_t **rank)
{
    ncf__idkey *key = NCF__NEW(ncf__idkey, t->n ? t->n : 1);
    int64_t k;
    *text = NCF__NEW(char, t->used ? t->used : 1), *at = NCF__NEW(int64_t, t->n + 1),
    *rank = NCF__NEW(int64_t, t->n ? t->n : 1);
    if (!key || !*text || !*at || !*rank) {
        NCF_FREE(key), NCF__DROP(*text), NCF__DROP(*at), NCF__DROP(*rank);
        return ncf__fail(NCF_ERR_NOMEM, "out of memory sorting %lld ids", (long long)t->n);
    }
    for (k = 0; k < t->n; k++)
        key[k].p = t->bytes + t->at[k], key[k].len = t->at[k + 1] - t->at[k], key[k].src = (int32_t)k;
    ncf__sort(key, (size_t)t->n, sizeof *key, ncf__cmp_idkey_text);
    (*at)[0] = 0;
    for (k = 0; k < t->n; k++) {
        memcpy(*text + (*at)[k], key[k].p, (size_t)key[k].len);
        (*at)[k + 1] = (*at)[k] + key[k].len;
        (*rank)[key[k].src] = k;
    }
    NCF_FREE(key);
    return NCF_OK;
}

/* A column's kept ids from their ranks in (text, at) to their bytes: *raw (ranks) is freed. */
static int ncf__ids_to_text(int64_t **raw, int n, const char *text, const int64_t *at, char **out, int64_t **out_at)
{
    int64_t bytes = 0;
    int k;
    for (k = 0; k < n; k++) bytes += at[(*raw)[k] + 1] - at[(*raw)[k]];
    *out = NCF__NEW(char, bytes ? bytes : 1), *out_at = NCF__NEW(int64_t, (size_t)n + 1);
    if (!*out || !*out_at) {
        NCF__DROP(*out), NCF__DROP(*out_at);
        return ncf__fail(NCF_ERR_NOMEM, "out of memory for %d text ids", n);
    }
    for ((*out_at)[0] = 0, k = 0; k < n; k++) {
        int64_t r = (*raw)[k], len = at[r + 1] - at[r];
        memcpy(*out + (*out_at)[k], text + at[r], (size_t)len);
        (*out_at)[k + 1] = (*out_at)[k] + len;
    }
    NCF__DROP(*raw);
    return NCF_OK;
}

/* How a log is written: given, or found from its first records (ncf__sniff). */
typedef struct {
    char sep[4];      /* "::", "\t", ",", ";", "|", or " " for runs of blanks */
    int header;       /* the first record names the columns */
    int nf;           /* fields per record */
    int col[6];       /* user, item, rating, timestamp, strength, event: the 0-based field, -1 absent */
    int text[2];      /* user, item ids read as text */
    int need_int;     /* ids must be plain integers (the paper split) */
    int trim_ids;     /* blanks around an unquoted text id are not part of it (ncf_dataset_opts.trim_ids) */
    int64_t edged[2]; /* user, item id fields with a blank at either end, outside any quotes */
    /* ncf_dataset_opts.events: the kinds listed (nev, 0: none), the first nev of kind_name, and
       each one's strength */
    int nev;
    double ev_value[NCF_MAX_EVENT_KINDS];
    /* what the records held: lines rated 0 or below kept, event kinds as report.events (the
       listed ones first, then the others as first read) */
    int64_t nonpositive, events_dropped, other_events;
    int kinds;
    char kind_name[NCF_MAX_EVENT_KINDS][NCF_MAX_EVENT_NAME + 1];
    int64_t kind_lines[NCF_MAX_EVENT_KINDS];
} ncf__dialect;

/* Header names of each column (lower case, letters and digits only). A name that is none of
   these but ends in "rating" or "timestamp" is that column. (The strength has none: it is the
   rating column unless given.) */
static const char *const ncf__aliases[6] = {
    "user userid users uid visitorid visitor customerid customer clientid memberid accountid reviewerid profileid "
    "personid readerid listenerid viewerid playerid subscriberid buyerid",
    "item itemid items iid movieid movie isbn asin artistid artist productid product trackid track songid song bookid "
    "book businessid business sku articleid article animeid anime gameid game videoid video contentid courseid "
    "recipeid jokeid placeid poiid objectid docid newsid showid podcastid",
    "rating ratings score weight count plays playcount value stars preference feedback clicks views listens",
    "timestamp time ts unixtime epoch utime",
    "",
    "event events eventtype eventname action actiontype behavior behaviour behaviortype interaction interactiontype "
    "activity"};
static const char *const ncf__col_what[6] = {"user id", "item id", "rating", "timestamp", "strength", "event"};

/* A header name as the aliases are written: letters and digits, lower case. */
static void ncf__norm_name(ncf__span f, char *out, size_t size)
{
    size_t n = 0;
    for (; f.s < f.e && n + 1 < size; f.s++) {
        char c = *f.s;
        if (c >= 'A' && c <= 'Z') out[n++] = (char)(c - 'A' + 'a');
        else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) out[n++] = c;
    }
    out[n] = 0;
}

static int ncf__has_word(const char *list, const char *w)
{
    size_t n = strlen(w);
    const char *p = list;
    while (n && (p = strstr(p, w)) != NULL) {
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == 0)) return 1;
        p += n;
    }
    return 0;
}

static int ncf__ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* Which column a header name is, by the aliases: 0-5, or -1. */
static int ncf__alias_of(const char *norm)
{
    int c;
    for (c = 0; c < 6; c++)
        if (ncf__has_word(ncf__aliases[c], norm)) return c;
    return ncf__ends_with(norm, "rating") ? 2 : ncf__ends_with(norm, "timestamp") ? 3 : -1;
}

#define NCF__SNIFF 16 /* records the separator and header are judged on */

/* The first records: field counts, which fields are numbers, and the first one's fields. */
typedef struct {
    int n, nf[NCF__SNIFF];
    uint64_t num[NCF__SNIFF];
    ncf__span first[NCF__MAX_FIELDS];
} ncf__sample;

static void ncf__take_sample(const char *p, const char *end, const char *sep, ncf__sample *S)
{
    ncf__cursor C;
    ncf__span f[NCF__MAX_FIELDS];
    int nf, k;
    C.p = p, C.end = end, C.line = 0, C.next = 1;
    S->n = 0;
    while (S->n < NCF__SNIFF && (nf = ncf__record(&C, sep, f, NCF__MAX_FIELDS)) != -1) {
        if (nf == 0) continue;
        if (nf < 0) break;
        if (S->n == 0) memcpy(S->first, f, sizeof f);
        S->nf[S->n] = nf, S->num[S->n] = 0;
        for (k = 0; k < nf && k < 64; k++) {
            int esc;
            ncf__span v = ncf__value(f[k], &esc);
            if (ncf__num_field(v.s, v.e)) S->num[S->n] |= (uint64_t)1 << k;
        }
        S->n++;
    }
}

/* The separator that splits the first records into the same number of fields, two or more:
   the first of "::", TAB, ",", ";", "|" and blanks that does, else the one that splits most
   records. */
static const char *const ncf__seps[6] = {"::", "\t", ",", ";", "|", " "};
static void ncf__find_sep(const char *p, const char *end, char sep[4])
{
    const char *const *cand = ncf__seps;
    ncf__sample S;
    int c, k, best = 2, best_split = -1;
    for (c = 0; c < 6; c++) {
        int same = 1, split = 0;
        ncf__take_sample(p, end, cand[c], &S);
        for (k = 0; k < S.n; k++) same &= S.nf[k] == S.nf[0] && S.nf[0] >= 2, split += S.nf[k] >= 2;
        if (S.n && same) {
            best = c;
            break;
        }
        if (split > best_split) best_split = split, best = c;
    }
    strcpy(sep, cand[best]);
}

/* Whether the first record names columns: a known column name, a column asked for by name,
   or a field that is not a number where every later record has one. */
static int ncf__is_header(const ncf__sample *S, const ncf_dataset_opts *o)
{
    int k, c, r;
    char norm[64];
    int64_t v;
    for (k = 0; k < S->nf[0] && k < NCF__MAX_FIELDS; k++) {
        int esc;
        ncf__norm_name(ncf__value(S->first[k], &esc), norm, sizeof norm);
        if (norm[0] && ncf__alias_of(norm) >= 0) return 1;
    }
    for (c = 0; c < 6; c++)
        if (o->columns[c] && o->columns[c][0] &&
            ncf__int_field(o->columns[c], o->columns[c] + strlen(o->columns[c]), &v) != 1)
            return 1;
    for (k = 0; k < S->nf[0] && k < 64 && S->n > 1; k++) {
        int later = 1;
        for (r = 1; r < S->n; r++) later &= (S->num[r] >> k) & 1;
        if (later && !((S->num[0] >> k) & 1)) return 1;
    }
    return 0;
}

/* Whether some column is given as number k (it is then not another's by its place). */
static int ncf__column_given(const ncf_dataset_opts *o, int k)
{
    int c;
    int64_t v;
    for (c = 0; c < 6; c++)
        if (o->columns[c] && ncf__int_field(o->columns[c], o->columns[c] + strlen(o->columns[c]), &v) == 1 && v == k)
            return 1;
    return 0;
}

/* Column c as asked for (a 1-based number or a header name), by the aliases, or by position
   without a header, into *col: -1 when the file has none (rating and timestamp may be absent),
   -2 when a header has no name for the user or the item. The strength, read only with a
   weighting, is by default the rating column. */
static int ncf__find_column(const char *name, const ncf__sample *S, const ncf__dialect *D, const ncf_dataset_opts *o,
                            int c, int *col)
{
    const char *want = o->columns[c];
    char norm[64], w[64];
    int k;
    int64_t v;
    *col = -1;
    if (c == NCF_COL_STRENGTH && o->events) /* (the events' values are the strengths) */
        return want && want[0] ? ncf__fail(NCF_ERR_ARG,
                                           "%s: a strength column and an events list: the events' values "
                                           "are the strengths; give one",
                                           name)
                               : NCF_OK;
    if (c == NCF_COL_STRENGTH) {
        if (o->weighting == NCF_WEIGHT_NONE) return NCF_OK;
        if (!want) *col = D->col[NCF_COL_RATING];
        if (!want || !want[0])
            return *col >= 0 ? NCF_OK
                             : ncf__fail(NCF_ERR_ARG,
                                         "%s: a weighting needs a strength column (or a rating "
                                         "column), and the file has none",
                                         name);
    }
    if (want && !want[0])
        return c < 2 ? ncf__fail(NCF_ERR_ARG, "%s: the %s column cannot be none", name, ncf__col_what[c]) : NCF_OK;
    if (want && ncf__int_field(want, want + strlen(want), &v) == 1) {
        if (v < 1 || v > D->nf)
            return ncf__fail(NCF_ERR_ARG, "%s: %s column %s: the file has %d columns", name, ncf__col_what[c], want,
                             D->nf);
        *col = (int)v - 1;
        return NCF_OK;
    }
    if (!D->header) {
        if (want)
            return ncf__fail(NCF_ERR_ARG, "%s: %s column '%s': the file has no header; give its number", name,
                             ncf__col_what[c], want);
        *col = c < D->nf && c < NCF_COL_STRENGTH && !ncf__column_given(o, c + 1) ? c : -1; /* (never an event) */
        return NCF_OK;
    }
    if (want) {
        ncf__span ws;
        ws.s = want, ws.e = want + strlen(want);
        ncf__norm_name(ws, w, sizeof w);
    }
    for (k = 0; k < D->nf && k < NCF__MAX_FIELDS; k++) {
        int esc;
        ncf__norm_name(ncf__value(S->first[k], &esc), norm, sizeof norm);
        if (want ? !strcmp(norm, w) : norm[0] && ncf__alias_of(norm) == c) {
            *col = k;
            return NCF_OK;
        }
    }
    if (want) return ncf__fail(NCF_ERR_ARG, "%s:1: no column named '%s' in the header", name, want);
    if (c < 2) *col = -2;
    return NCF_OK;
}

/* The header as read, for a message. */
static const char *ncf__header_text(const ncf__sample *S)
{
    return ncf__shown(S->first[0].s, S->first[S->nf[0] < NCF__MAX_FIELDS ? S->nf[0] - 1 : NCF__MAX_FIELDS - 1].e);
}

/* Fills in what D leaves open from the first records: separator, header, fields, columns;
   and names them in rep. */
static int ncf__sniff(const char *name, const char *p, const char *end, const ncf_dataset_opts *o, ncf__dialect *D,
                      ncf_load_report *rep)
{
    ncf__sample S;
    int c, k;
    if (!D->sep[0]) ncf__find_sep(p, end, D->sep);
    ncf__take_sample(p, end, D->sep, &S);
    if (S.n == 0) return ncf__fail(NCF_ERR_PARSE, "%s: no ratings in the file", name);
    D->nf = S.nf[0];
    if (D->nf < 2)
        return ncf__fail(NCF_ERR_PARSE, "%s:1: one field a line: no separator ('%s' tried; give one)", name,
                         ncf__sep_name(D->sep));
    if (D->header < 0) D->header = ncf__is_header(&S, o);
    if (D->nf > NCF__MAX_FIELDS)
        return ncf__fail(NCF_ERR_PARSE, "%s:1: %d fields; at most %d are read", name, D->nf, NCF__MAX_FIELDS);
    for (c = 0; c < 6; c++) {
        int rc = ncf__find_column(name, &S, D, o, c, &D->col[c]);
        if (rc != NCF_OK) return rc;
        if (D->col[c] == -2)
            return ncf__fail(NCF_ERR_PARSE,
                             "%s:1: no %s column in the header '%s' (names tried: %s; or give the column)", name,
                             c ? "item" : "user", ncf__header_text(&S), ncf__aliases[c]);
        for (k = 0; k < c; k++)
            if (D->col[c] >= 0 && D->col[c] == D->col[k] && !(c == NCF_COL_STRENGTH && k == NCF_COL_RATING))
                return ncf__fail(NCF_ERR_ARG, "%s: column %d is both the %s and the %s", name, D->col[c] + 1,
                                 ncf__col_what[k], ncf__col_what[c]);
    }
    if (D->nev && D->col[NCF_COL_EVENT] < 0)
        return D->header
            ? ncf__fail(NCF_ERR_ARG,
                        "%s:1: an events list needs an event column, and the header '%s' has none "
                        "(names tried: %s; or give the column)",
                        name, ncf__header_text(&S), ncf__aliases[NCF_COL_EVENT])
            : ncf__fail(NCF_ERR_ARG, "%s: an events list needs the event column's number (no header)", name);
    memcpy(rep->sep, D->sep, sizeof rep->sep), rep->header = D->header;
    for (c = 0; c < 6; c++) {
        int esc;
        ncf__span v;
        rep->columns[c][0] = 0;
        if (D->col[c] < 0) continue;
        v = ncf__value(S.first[D->col[c]], &esc);
        if (D->header)
            snprintf(rep->columns[c], sizeof rep->columns[c], "%.*s", /* (fits: 39 bytes at most) */
                     (int)(v.e - v.s < 39 ? v.e - v.s : 39), v.s);
        else snprintf(rep->columns[c], sizeof rep->columns[c], "column %d", D->col[c] + 1);
    }
    return NCF_OK;
}

/* Records in the buffer at most: its line ends, plus one. */
static int64_t ncf__max_records(const char *p, const char *end)
{
    int64_t n = 1;
    for (; p < end; p++) n += *p == '\n' || (*p == '\r' && !(p + 1 < end && p[1] == '\n'));
    return n;
}

/* An id field into *v: a plain integer, or the number of its text among the column's ids.
   Returns 1; NCF__AS_TEXT when a numeric column meets text (to read it again as text: not 0,
   so that no answer can be taken for NCF_OK); or an error. */
#define NCF__AS_TEXT 2
static int ncf__read_id(const char *name, const ncf__cursor *C, ncf__dialect *D, int c, ncf__span f, ncf__intern *in,
                        int64_t *v)
{
    char buf[NCF_MAX_ID_BYTES];
    int esc, len;
    ncf__span s = ncf__value(f, &esc);
    int quoted = s.s > f.s && s.s[-1] == '"';
    if (!D->text[c]) {
        if (!esc && ncf__plain_int(s.s, s.e, v)) return 1;
        if (!D->need_int) return NCF__AS_TEXT;
        return ncf__fail(NCF_ERR_PARSE, "%s:%lld: %s '%s' is not an integer", name, (long long)C->line,
                         ncf__col_what[c], ncf__shown(s.s, s.e));
    }
    if (!quoted && (s.s != f.s || s.e != f.e)) { /* an id as written keeps its blanks: only quotes delimit */
        D->edged[c]++;
        if (!D->trim_ids) s = f;
    }
    len = esc ? ncf__unescape(s, buf) : s.e - s.s > NCF_MAX_ID_BYTES ? -1 : (int)(s.e - s.s);
    if (len < 0)
        return ncf__fail(NCF_ERR_PARSE, "%s:%lld: %s '%s...' is longer than %d bytes", name, (long long)C->line,
                         ncf__col_what[c], ncf__shown(s.s, s.s + 40), NCF_MAX_ID_BYTES);
    if (!esc) memcpy(buf, s.s, (size_t)len);
    if (len == 0) return ncf__fail(NCF_ERR_PARSE, "%s:%lld: empty %s", name, (long long)C->line, ncf__col_what[c]);
    if (memchr(buf, 0, (size_t)len))
        return ncf__fail(NCF_ERR_PARSE, "%s:%lld: %s '%s' holds a NUL byte", name, (long long)C->line, ncf__col_what[c],
                         ncf__shown(buf, buf + len));
    if ((*v = ncf__intern_add(in, buf, (size_t)len)) < 0)
        return ncf__fail(NCF_ERR_NOMEM, "%s:%lld: out of memory for the %ss", name, (long long)C->line,
                         ncf__col_what[c]);
    return 1;
}

#define NCF__MAX_STRENGTH 1e15 /* a line's strength at most: a sum of 2^31 of them stays exact to 1e-6 */

/* A record's event, counted by kind: its place in the events list (-1: not listed), or 0 with
   no list. */
static int ncf__event_of(ncf__dialect *D, ncf__span f)
{
    char buf[NCF_MAX_ID_BYTES];
    int esc, k, len, fits;
    ncf__span v = ncf__value(f, &esc);
    len = esc ? ncf__unescape(v, buf) : v.e - v.s > NCF_MAX_ID_BYTES ? -1 : (int)(v.e - v.s);
    if (len > 0 && !esc) memcpy(buf, v.s, (size_t)len);
    fits = len > 0 && len <= NCF_MAX_EVENT_NAME; /* (a longer or empty one is no kind a list can name) */
    for (k = 0; fits && k < D->kinds; k++)
        if (!memcmp(D->kind_name[k], buf, (size_t)len) && D->kind_name[k][len] == 0) break;
    if (fits && k < D->kinds) D->kind_lines[k]++;
    else if (fits && D->kinds < NCF_MAX_EVENT_KINDS)
        memcpy(D->kind_name[D->kinds], buf, (size_t)len), D->kind_name[D->kinds][len] = 0,
                                                          D->kind_lines[D->kinds++] = 1;
    else D->other_events++, k = NCF_MAX_EVENT_KINDS;
    return !D->nev ? 0 : k < D->nev ? k : -1; /* (the kinds begin with the list's, in its order) */
}

/* Rating, timestamp, event and strength fields of a record into tr's row n: a line min_rating
   or the events list drops is no positive, and its strength is not read. */
static int ncf__read_extras(const char *name, const ncf__cursor *C, ncf__dialect *D, const ncf__span *f,
                            float min_rating, ncf__triples *tr)
{
    int esc, ok, pos = 1, ev = 0;
    ncf__span v;
    int64_t n = tr->n;
    tr->t[n] = n;
    if (D->col[2] >= 0) {
        double r;
        v = ncf__value(f[D->col[2]], &esc);
        if (!ncf__num_field(v.s, v.e))
            return ncf__fail(NCF_ERR_PARSE, "%s:%lld: %s '%s' is not a number", name, (long long)C->line,
                             tr->str && D->col[NCF_COL_STRENGTH] == D->col[2] ? "strength" : "rating",
                             ncf__shown(v.s, v.e)); /* (the column named as the caller gave it) */
        r = ncf__num_value(v);
        if (min_rating > -HUGE_VALF) pos = (float)r >= min_rating; /* (as floats: 3.7 >= 3.7f) */
        else D->nonpositive += r <= 0;
    }
    if (D->col[NCF_COL_EVENT] >= 0 && (ev = ncf__event_of(D, f[D->col[NCF_COL_EVENT]])) < 0)
        D->events_dropped += pos, pos = 0;
    if (tr->pos) tr->pos[n] = (uint8_t)pos;
    if (tr->str && !pos) tr->str[n] = 0;
    else if (tr->str && D->nev) tr->str[n] = D->ev_value[ev];
    else if (tr->str) {
        v = ncf__value(f[D->col[NCF_COL_STRENGTH]], &esc);
        tr->str[n] = ncf__num_field(v.s, v.e) ? ncf__num_value(v) : -1;
        if (!(tr->str[n] >= 0 && tr->str[n] <= NCF__MAX_STRENGTH)) /* (NaN, inf and text fail) */
            return ncf__fail(NCF_ERR_PARSE, "%s:%lld: strength '%s' is not a number in [0, 1e15]%s", name,
                             (long long)C->line, ncf__shown(v.s, v.e),
                             tr->str[n] < 0 && D->col[NCF_COL_STRENGTH] == D->col[2] && min_rating == -HUGE_VALF
                                 ? " (a rating below 0 often means 'not rated': a min_rating drops such lines)"
                                 : "");
    }
    if (D->col[3] >= 0) {
        v = ncf__value(f[D->col[3]], &esc);
        if ((ok = ncf__int_field(v.s, v.e, &tr->t[n])) != 1)
            return ncf__fail(NCF_ERR_PARSE, "%s:%lld: timestamp '%s' is %s", name, (long long)C->line,
                             ncf__shown(v.s, v.e),
                             ok < 0 ? "out of range (timestamps lie strictly between -2^63 and 2^63)"
                                    : "not an integer (epoch seconds)");
    }
    return NCF_OK;
}

/* Every record of the buffer into tr: the ids (numbers, or their numbers in in[]), the
   timestamp (else the record's number), and whether it is a positive (tr->pos, with a
   min_rating). A numeric column that meets a text id turns to text, and the reading starts
   over. line0: the buffer's first line in the file (a header is skipped at line 1 only). */
static int ncf__read_records(const char *name, const char *p, const char *end, ncf__dialect *D, float min_rating,
                             ncf__triples *tr, ncf__intern in[2], int64_t line0)
{
    ncf__span f[NCF__MAX_FIELDS];
    ncf__cursor C;
    int nf, c, rc;
again:
    tr->n = 0, D->edged[0] = D->edged[1] = 0;
    D->nonpositive = D->events_dropped = D->other_events = 0, D->kinds = D->nev;
    memset(D->kind_lines, 0, sizeof D->kind_lines); /* (the kinds read past the list's are read again) */
    ncf__intern_free(&in[0]), ncf__intern_free(&in[1]);
    C.p = p, C.end = end, C.line = 0, C.next = line0;
    if (D->header && line0 == 1)
        while (ncf__record(&C, D->sep, f, NCF__MAX_FIELDS) == 0) {}
    while ((nf = ncf__record(&C, D->sep, f, NCF__MAX_FIELDS)) != -1) {
        int64_t v[2];
        if (nf == 0) continue;
        if (nf == -2)
            return ncf__fail(NCF_ERR_PARSE, "%s:%lld: a quote opened here is never closed", name, (long long)C.line);
        if (nf != D->nf)
            return ncf__fail(NCF_ERR_PARSE, "%s:%lld: expected %d fields separated by '%s', got %d", name,
                             (long long)C.line, D->nf, ncf__sep_name(D->sep), nf);
        for (c = 0; c < 2; c++) {
            if ((rc = ncf__read_id(name, &C, D, c, f[D->col[c]], &in[c], &v[c])) == NCF__AS_TEXT) {
                D->text[c] = 1;
                goto again;
            }
            if (rc < 0) return rc;
        }
        if ((rc = ncf__read_extras(name, &C, D, f, min_rating, tr)) != NCF_OK) return rc;
        tr->u[tr->n] = v[0], tr->i[tr->n] = v[1];
        tr->n++;
    }
    return NCF_OK;
}

/* Records read: none is an error naming the file. */
static int ncf__some_records(const char *name, const ncf__triples *tr)
{
    return tr->n ? NCF_OK : ncf__fail(NCF_ERR_PARSE, "%s: no ratings in the file", name);
}

/* ncf_dataset_opts.events, "view=1,addtocart=3,transaction", into D's list. */
static int ncf__events_list(const char *name, const char *list, ncf__dialect *D)
{
    const char *p = list;
    for (;;) {
        const char *e = p + strcspn(p, ",="), *end;
        char *num_end;
        double x = 1;
        int k, len = (int)(e - p < 1000 ? e - p : 1000);
        if (len == 0 || len > NCF_MAX_EVENT_NAME)
            return ncf__fail(NCF_ERR_ARG, "%s: events '%s': each kind is a name of 1 to %d bytes, =X its strength",
                             name, ncf__shown(list, list + strlen(list)), NCF_MAX_EVENT_NAME);
        if (D->nev == NCF_MAX_EVENT_KINDS)
            return ncf__fail(NCF_ERR_ARG, "%s: events '%s': at most %d kinds", name,
                             ncf__shown(list, list + strlen(list)), NCF_MAX_EVENT_KINDS);
        for (k = 0; k < D->nev; k++)
            if (!strncmp(D->kind_name[k], p, (size_t)len) && D->kind_name[k][len] == 0)
                return ncf__fail(NCF_ERR_ARG, "%s: events: '%.*s' is listed twice", name, len, p);
        end = e;
        if (*e == '=') { /* (strtod's overflow is past the bound; its underflow a strength of 0) */
            x = strtod(e + 1, &num_end), end = num_end;
            if (end == e + 1 || !(x >= 0 && x <= NCF__MAX_STRENGTH) || (*end && *end != ','))
                return ncf__fail(NCF_ERR_ARG, "%s: events: '%.*s' is not a strength in [0, 1e15]", name,
                                 (int)strcspn(e + 1, ","), e + 1);
        }
        memcpy(D->kind_name[D->nev], p, (size_t)len), D->kind_name[D->nev][len] = 0, D->ev_value[D->nev++] = x;
        if (!*end) return NCF_OK;
        p = end + 1;
    }
}

/* The dialect of a format: what it fixes, the rest from the options (or found). */
static int ncf__dialect_of(const char *name, const ncf_dataset_opts *o, ncf__dialect *D)
{
    memset(D, 0, sizeof *D);
    D->header = o->header == NCF_HEADER_YES ? 1 : o->header == NCF_HEADER_NO ? 0 : -1;
    D->trim_ids = o->trim_ids;
    if (o->format == NCF_FORMAT_DAT) strcpy(D->sep, "::");
    else if (o->format == NCF_FORMAT_TAB) strcpy(D->sep, "\t");
    else if (o->format == NCF_FORMAT_CSV) strcpy(D->sep, ",");
    if ((o->format == NCF_FORMAT_DAT || o->format == NCF_FORMAT_TAB) && D->header < 0) D->header = 0;
    if (o->sep) {
        size_t n = strlen(o->sep);
        if (n == 0 || n > 3 || strpbrk(o->sep, "\"\r\n"))
            return ncf__fail(NCF_ERR_ARG, "%s: separator '%s': need 1 to 3 characters, no quote or line end", name,
                             o->sep);
        strcpy(D->sep, o->sep);
        if (D->sep[0] == ' ') D->sep[1] = 0; /* blanks */
    }
    if (NCF__MANY(o->holdout) && (o->holdout != NCF_HOLDOUT_CUTOFF || o->validation) &&
        !(o->holdout_fraction > 0 && o->holdout_fraction < 1))
        return ncf__fail(NCF_ERR_ARG,
                         "%s: holdout_fraction %g: a ratio or time split (or a cut-off's validation) "
                         "needs a share in (0, 1)",
                         name, (double)o->holdout_fraction);
    if (o->holdout < NCF_HOLDOUT_AUTO || (o->holdout > NCF_HOLDOUT_SAVED && o->holdout != NCF_HOLDOUT_ITEMS) ||
        o->header < 0 || o->header > NCF_HEADER_NO || o->min_ratings < 0 || o->eval_negatives < 0 ||
        o->min_rating != o->min_rating || o->min_item_ratings < 0 || (o->kcore != 0 && o->kcore != 1) ||
        o->weighting < NCF_WEIGHT_NONE || o->weighting > NCF_WEIGHT_LOG || (o->trim_ids != 0 && o->trim_ids != 1))
        return ncf__fail(NCF_ERR_ARG,
                         "%s: a load option is out of range (holdout %d, header %d, min_ratings %d, "
                         "min_item_ratings %d, kcore %d, eval_negatives %d, weighting %d, trim_ids %d)",
                         name, o->holdout, o->header, o->min_ratings, o->min_item_ratings, o->kcore, o->eval_negatives,
                         o->weighting, o->trim_ids);
    if (o->weighting != NCF_WEIGHT_NONE && !(o->alpha > 0 && o->alpha <= 1e6f)) /* (NaN fails) */
        return ncf__fail(NCF_ERR_ARG, "%s: alpha %g: a weighting needs 0 < alpha <= 1e6", name, (double)o->alpha);
    return o->events ? ncf__events_list(name, o->events, D) : NCF_OK;
}

/* A log read, not yet built: its dialect, records and text ids. */
typedef struct {
    ncf__dialect D;
    ncf__triples tr;
    ncf__intern in[2];
    ncf_load_report rep;
} ncf__parsed;

static void ncf__parsed_free(ncf__parsed *P)
{
    ncf__triples_free(&P->tr);
    ncf__intern_free(&P->in[0]), ncf__intern_free(&P->in[1]);
}

/* Reads a delimited log in memory into P (freed on failure); nothing of buf is kept. */
static int ncf__parse_log(const char *name, const char *buf, size_t len, const ncf_dataset_opts *o, ncf__parsed *P)
{
    const char *p = buf, *end = buf + len;
    int rc, use_min = o->min_rating > -HUGE_VALF;
    memset(P, 0, sizeof *P);
    p += ncf__bom_bytes(p, len);
    if ((rc = ncf__dialect_of(name, o, &P->D)) != NCF_OK ||
        (rc = ncf__sniff(name, p, end, o, &P->D, &P->rep)) != NCF_OK)
        return rc;
    if (use_min && P->D.col[2] < 0)
        return ncf__fail(NCF_ERR_ARG, "%s: min_rating needs a rating column, and the file has none", name);
    if (o->weighting != NCF_WEIGHT_NONE && P->D.col[NCF_COL_STRENGTH] < 0 && !P->D.nev)
        return ncf__fail(NCF_ERR_ARG, "%s: a weighting needs a strength column, and the file has none", name);
    rc = ncf__triples_reserve(&P->tr, ncf__max_records(p, end), use_min || P->D.nev, o->weighting != NCF_WEIGHT_NONE);
    if (rc != NCF_OK) return rc;
    if ((rc = ncf__read_records(name, p, end, &P->D, o->min_rating, &P->tr, P->in, 1)) != NCF_OK ||
        (rc = ncf__some_records(name, &P->tr)) != NCF_OK)
        ncf__parsed_free(P);
    return rc;
}

/* What the records held beyond their positives, into the report. */
static void ncf__report_events(const ncf__dialect *D, ncf_load_report *rep)
{
    int k;
    rep->nonpositive_ratings = D->nonpositive;
    rep->event_kinds = D->kinds, rep->other_event_lines = D->other_events, rep->events_dropped = D->events_dropped;
    for (k = 0; k < D->kinds; k++) {
        memcpy(rep->events[k].name, D->kind_name[k], sizeof rep->events[k].name);
        rep->events[k].lines = D->kind_lines[k];
        rep->events[k].kept = !D->nev || k < D->nev;
        rep->events[k].strength = k < D->nev ? D->ev_value[k] : 0;
    }
}

/* The dataset of a parsed log; P is freed. */
static int ncf__build_log(ncf_dataset *ds, const char *name, const ncf_dataset_opts *o, ncf__parsed *P)
{
    ncf__build_opts bo;
    char *text[2] = {NULL, NULL};
    int64_t *at[2] = {NULL, NULL}, *rank[2] = {NULL, NULL}, j;
    int rc = NCF_OK, c;
    const ncf__dialect *D = &P->D;
    for (c = 0; c < 2; c++) { /* text ids: their numbers become their places in byte order */
        int64_t *v = c ? P->tr.i : P->tr.u;
        if (!D->text[c]) continue;
        if ((rc = ncf__intern_sort(&P->in[c], &text[c], &at[c], &rank[c])) != NCF_OK) goto done;
        for (j = 0; j < P->tr.n; j++) v[j] = rank[c][v[j]];
        ncf__intern_free(&P->in[c]);
    }
    memset(&bo, 0, sizeof bo);
    bo.positive = P->tr.pos, bo.min_ratings = o->min_ratings, bo.seed = o->seed, bo.report = &P->rep;
    bo.min_item_ratings = o->min_item_ratings, bo.kcore = o->kcore;
    bo.strength = P->tr.str, bo.weighting = o->weighting, bo.alpha = o->alpha;
    bo.holdout = o->holdout != NCF_HOLDOUT_AUTO ? o->holdout : D->col[3] >= 0 ? NCF_HOLDOUT_LATEST : NCF_HOLDOUT_RANDOM;
    bo.validation = o->validation, bo.fraction = o->holdout_fraction, bo.cutoff = o->holdout_cutoff;
    P->rep.text_ids[0] = D->text[0], P->rep.text_ids[1] = D->text[1];
    P->rep.blank_edged_ids[0] = D->edged[0], P->rep.blank_edged_ids[1] = D->edged[1];
    ncf__report_events(D, &P->rep);
    if ((rc = ncf__build(ds, P->tr.u, P->tr.i, D->col[3] >= 0 ? P->tr.t : NULL, P->tr.n, &bo)) != NCF_OK) {
        rc = ncf__prefix_error(rc, name);
        goto done;
    }
    if ((D->text[0] &&
         (rc = ncf__ids_to_text(&ds->raw_user, ds->num_users, text[0], at[0], &ds->user_text, &ds->user_text_at)) !=
             NCF_OK) ||
        (D->text[1] &&
         (rc = ncf__ids_to_text(&ds->raw_item, ds->num_items, text[1], at[1], &ds->item_text, &ds->item_text_at)) !=
             NCF_OK))
        ncf_dataset_free(ds);
done:
    ncf__parsed_free(P);
    for (c = 0; c < 2; c++) NCF_FREE(text[c]), NCF_FREE(at[c]), NCF_FREE(rank[c]);
    return rc;
}

/* Eval negatives for a loaded log (none to draw when nothing is held out). */
static int ncf__log_negatives(ncf_dataset *ds, const char *name, const ncf_dataset_opts *o)
{
    int rc;
    if (ds->report.holdout == NCF_HOLDOUT_NONE || ds->test_ptr) return NCF_OK; /* (many items: full ranking) */
    rc = ncf_sample_eval_negatives(ds, o->eval_negatives ? o->eval_negatives : 99, o->seed);
    if (rc != NCF_OK) {
        rc = ncf__prefix_error(rc, name);
        ncf_dataset_free(ds);
    }
    return rc;
}

/* The validation set an ncf_dataset_opts asks for, after the load. */
static int ncf__load_validation(ncf_dataset *ds, const char *name, const ncf_dataset_opts *o)
{
    int rc;
    if (!o->validation || ds->test_ptr) return NCF_OK; /* (a many-item split held it out as it built) */
    if (ds->report.holdout == NCF_HOLDOUT_NONE)
        rc = ncf__fail(NCF_ERR_ARG, "validation needs a hold-out (holdout none trains on everything)");
    else rc = ncf_hold_out_validation(ds, ds->num_eval_neg, o->seed);
    if (rc != NCF_OK) {
        rc = ncf__prefix_error(rc, name);
        ncf_dataset_free(ds);
    }
    return rc;
}

NCFDEF int ncf_load_dataset_mem(ncf_dataset *ds, const char *name, const void *buf, size_t len,
                                const ncf_dataset_opts *opts)
{
    ncf_dataset_opts o = opts ? *opts : ncf_dataset_opts_default();
    int rc;
    if (!ds || (!buf && len)) return ncf__fail(NCF_ERR_ARG, "ncf_load_dataset_mem: NULL dataset or buffer");
    memset(ds, 0, sizeof *ds);
    if (!name) name = "(memory)";
    if (o.format == NCF_FORMAT_NCF)
        return ncf__fail(NCF_ERR_ARG, "%s: the paper split is three files: ncf_load_dataset", name);
    {
        ncf__parsed P;
        if ((rc = ncf__parse_log(name, (const char *)buf, len, &o, &P)) != NCF_OK ||
            (rc = ncf__build_log(ds, name, &o, &P)) != NCF_OK)
            return rc;
    }
    if ((rc = ncf__log_negatives(ds, name, &o)) != NCF_OK) return rc;
    return ncf__load_validation(ds, name, &o);
}

#ifndef NCF_NO_STDIO
/* ---- >>files: reading files, the MovieLens formats and the paper split ----------------------- */

typedef struct {
    const char *p, *end;
    int64_t line;
} ncf__lines;

/* Next line without its "\r\n"; 0 at the end. */
static int ncf__next_line(ncf__lines *L, const char **s, const char **e)
{
    const char *nl;
    if (L->p >= L->end) return 0;
    nl = (const char *)memchr(L->p, '\n', (size_t)(L->end - L->p));
    *s = L->p;
    *e = nl ? nl : L->end;
    L->p = nl ? nl + 1 : L->end;
    if (*e > *s && (*e)[-1] == '\r') (*e)--;
    L->line++;
    return 1;
}

/* The paper split's three parts (.train.rating, .test.rating, .test.negative): each a file
   (buf[k] NULL: read, parsed, freed one at a time) or bytes in memory, named for messages. */
typedef struct {
    const char *name[3];
    const char *buf[3];
    size_t len[3];
} ncf__split_src;

/* Part k's bytes: the caller's, or the file's (into *owned, for the caller to free). */
static int ncf__split_part(const ncf__split_src *src, int k, char **owned, const char **buf, size_t *len)
{
    int rc;
    *owned = NULL;
    if (src->buf[k]) {
        *buf = src->buf[k], *len = src->len[k];
        return NCF_OK;
    }
    if ((rc = ncf__read_file(src->name[k], owned, len, NULL)) == NCF_OK) *buf = *owned;
    return rc;
}

/* A part of the paper split: user TAB item TAB rating TAB timestamp, integer ids, no header. */
static int ncf__parse_ratings(const ncf__split_src *src, int part, ncf__triples *tr)
{
    ncf__dialect D;
    ncf__intern in[2];
    const char *buf, *path = src->name[part];
    char *owned;
    size_t len;
    int rc = ncf__split_part(src, part, &owned, &buf, &len);
    if (rc != NCF_OK) return rc;
    memset(&D, 0, sizeof D), memset(in, 0, sizeof in);
    strcpy(D.sep, "\t"), D.nf = 4, D.need_int = 1;
    D.col[0] = 0, D.col[1] = 1, D.col[2] = 2, D.col[3] = 3, D.col[4] = D.col[5] = -1;
    if ((rc = ncf__triples_reserve(tr, ncf__max_records(buf, buf + len), 0, 0)) == NCF_OK)
        if ((rc = ncf__read_records(path, buf, buf + len, &D, 0.0f, tr, in, 1)) == NCF_OK)
            rc = ncf__some_records(path, tr);
    NCF_FREE(owned);
    if (rc != NCF_OK) ncf__triples_free(tr);
    return rc;
}

/* Negatives on a .test.negative line (after its "(user,item)"). */
static int64_t ncf__count_fields(const char *c, const char *e)
{
    int64_t n = 0;
    while (c < e) {
        while (c < e && (*c == '\t' || *c == ' ')) c++;
        if (c < e) n++;
        while (c < e && *c != '\t' && *c != ' ') c++;
    }
    return n;
}

/* A line's negatives are distinct: one counted twice would weigh twice in the test item's
   rank. (The paper's ml-1m file has none twice.) */
static int ncf__distinct_negatives(const int32_t *row, int n, const char *path, int64_t line)
{
    int32_t *s = NCF__NEW(int32_t, n);
    int j, dup = -1;
    if (!s) return ncf__fail(NCF_ERR_NOMEM, "%s: out of memory", path);
    memcpy(s, row, sizeof(int32_t) * (size_t)n);
    ncf__sort(s, (size_t)n, sizeof *s, ncf__cmp_i32);
    for (j = 1; j < n && dup < 0; j++)
        if (s[j] == s[j - 1]) dup = s[j];
    NCF_FREE(s);
    return dup < 0
        ? NCF_OK
        : ncf__fail(NCF_ERR_DATA, "%s:%lld: negative %d appears twice on the line", path, (long long)line, dup);
}

/* Every line after the current one has n negatives too, checked before any memory is
   sized by the first line (a first line of millions must name the line that differs). */
static int ncf__same_counts(const char *path, const ncf__lines *from, int64_t n)
{
    ncf__lines L = *from;
    const char *s, *e;
    while (ncf__next_line(&L, &s, &e)) {
        const char *close = (const char *)memchr(s, ')', (size_t)(e - s));
        int64_t cnt;
        if (s == e || !close) continue; /* blank, or malformed: the main pass says so */
        if ((cnt = ncf__count_fields(close + 1, e)) != n)
            return ncf__fail(NCF_ERR_PARSE, "%s:%lld: %lld negatives, but the first line has %lld", path,
                             (long long)L.line, (long long)cnt, (long long)n);
    }
    return NCF_OK;
}

/* PREFIX.test.negative: "(user,item)" then the negatives, TAB separated, one line per
   line of PREFIX.test.rating and for the same (user, item). */
static int ncf__parse_negatives(const ncf__split_src *src, const ncf__triples *test, int32_t **out, int *per_line,
                                int64_t *max_item, int64_t **line_of_row)
{
    const char *buf, *path = src->name[2], *s, *e;
    char *owned;
    size_t len;
    ncf__lines L;
    int64_t row = 0, n0 = -1, *lines;
    int32_t *neg = NULL;
    int rc = ncf__split_part(src, 2, &owned, &buf, &len);
    if (rc != NCF_OK) return rc;
    if (!(lines = NCF__NEW(int64_t, test->n))) {
        NCF_FREE(owned);
        return ncf__fail(NCF_ERR_NOMEM, "%s: out of memory", path);
    }
    L.p = buf, L.end = buf + len, L.line = 0;
    L.p += ncf__bom_bytes(buf, len);
    while (rc == NCF_OK && ncf__next_line(&L, &s, &e)) {
        int64_t u, it, cnt = 0, v;
        const char *c, *comma, *close;
        if (s == e) continue;
        comma = (const char *)memchr(s, ',', (size_t)(e - s));
        close = (const char *)memchr(s, ')', (size_t)(e - s));
        if (*s != '(' || !comma || !close || comma > close || ncf__int_field(s + 1, comma, &u) != 1 ||
            ncf__int_field(comma + 1, close, &it) != 1) {
            rc = ncf__fail(NCF_ERR_PARSE, "%s:%lld: expected '(user,item)' at the start of the line", path,
                           (long long)L.line);
            break;
        }
        if (row >= test->n || test->u[row] != u || test->i[row] != it) {
            rc = row >= test->n
                ? ncf__fail(NCF_ERR_DATA, "%s:%lld: more lines than the .test.rating file has", path, (long long)L.line)
                : ncf__fail(NCF_ERR_DATA,
                            "%s:%lld: (%lld,%lld) does not match line %lld of the .test.rating file, "
                            "which holds (%lld,%lld)",
                            path, (long long)L.line, (long long)u, (long long)it, (long long)row + 1,
                            (long long)test->u[row], (long long)test->i[row]);
            break;
        }
        cnt = ncf__count_fields(close + 1, e);
        if (n0 < 0) {
            n0 = cnt;
            if (n0 == 0) {
                rc = ncf__fail(NCF_ERR_PARSE, "%s:%lld: no negatives", path, (long long)L.line);
                break;
            }
            if ((rc = ncf__same_counts(path, &L, n0)) != NCF_OK) break; /* before allocating for n0 each */
            neg = NCF__NEW(int32_t, (size_t)test->n * (size_t)n0);
            if (!neg) {
                rc = ncf__fail(NCF_ERR_NOMEM, "%s: out of memory for %lld negatives per line", path, (long long)n0);
                break;
            }
        } else if (cnt != n0) {
            rc = ncf__fail(NCF_ERR_PARSE, "%s:%lld: %lld negatives, but the first line has %lld", path,
                           (long long)L.line, (long long)cnt, (long long)n0);
            break;
        }
        cnt = 0;
        for (c = close + 1; c < e && rc == NCF_OK;) {
            const char *fs = c, *fe;
            while (fs < e && (*fs == '\t' || *fs == ' ')) fs++;
            fe = fs;
            while (fe < e && *fe != '\t' && *fe != ' ') fe++;
            if (fe > fs) {
                if (ncf__int_field(fs, fe, &v) != 1 || v < 0 || v > INT32_MAX)
                    rc = ncf__fail(NCF_ERR_PARSE, "%s:%lld: negative item '%s' is not a valid id", path,
                                   (long long)L.line, ncf__shown(fs, fe));
                else {
                    neg[row * n0 + cnt++] = (int32_t)v;
                    if (v > *max_item) *max_item = v;
                }
            }
            c = fe;
        }
        if (rc == NCF_OK && (rc = ncf__distinct_negatives(neg + row * n0, (int)n0, path, L.line)) != NCF_OK) break;
        lines[row++] = L.line;
    }
    NCF_FREE(owned);
    if (rc == NCF_OK && row != test->n)
        rc = ncf__fail(NCF_ERR_DATA, "%s: %lld lines, but the .test.rating file has %lld", path, (long long)row,
                       (long long)test->n);
    if (rc != NCF_OK) {
        NCF_FREE(neg);
        NCF_FREE(lines);
        return rc;
    }
    *out = neg;
    *per_line = (int)n0;
    *line_of_row = lines;
    return NCF_OK;
}

/* A given negative must not be one of the user's training items (a trained model ranks those
   high, which would move HR). The test item itself may appear: the paper's ml-1m file lists it
   among the negatives of 156 users, and evaluation ignores it there, as the paper's code does
   (its candidate scores are keyed by item, so the duplicate merges). */
static int ncf__check_negatives(const ncf_dataset *ds, const ncf__triples *test, const int32_t *neg, int per_line,
                                const int64_t *line_of_row, const char *path)
{
    int64_t j;
    int k;
    for (j = 0; j < test->n; j++) {
        int u = (int)test->u[j];
        const int32_t *p = ds->items + ds->user_ptr[u];
        int64_t deg = ds->user_ptr[u + 1] - ds->user_ptr[u];
        for (k = 0; k < per_line; k++) {
            int32_t v = neg[j * per_line + k];
            int64_t lo;
            NCF__FIRST_NOT(int64_t, lo, deg, p[mid] < v);
            if (lo < deg && p[lo] == v)
                return ncf__fail(NCF_ERR_DATA, "%s:%lld: negative %d is an item user %d rated in training", path,
                                 (long long)line_of_row[j], (int)v, u);
        }
    }
    return NCF_OK;
}

static int ncf__file_exists(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f) fclose(f);
    return f != NULL;
}

/* The paper's split's three files, PREFIX and each of these. */
static const char *const ncf__split_suffix[3] = {".train.rating", ".test.rating", ".test.negative"};
/* A split ncf_save_split wrote: PREFIX and each of these. */
static const char *const ncf__saved_suffix[3] = {".train.tsv", ".validation.tsv", ".test.tsv"};

/* The paper's split: ids already dense; the test file names each user's held-out
   item, the negative file its 99 candidates. */
static int ncf__load_split(ncf_dataset *ds, const char *prefix, const ncf__split_src *src, int sample_negs,
                           uint64_t seed, int holdout)
{
    ncf__build_opts bo;
    const char *const *path = src->name;
    ncf__triples train, test, all;
    int32_t *neg = NULL;
    int per_line = 0, rc, k;
    int64_t j, maxu = -1, maxi = -1, *neg_line = NULL;
    memset(&train, 0, sizeof train), memset(&test, 0, sizeof test), memset(&all, 0, sizeof all);
    if ((rc = ncf__parse_ratings(src, 0, &train)) != NCF_OK) return rc;
    if ((rc = ncf__parse_ratings(src, 1, &test)) != NCF_OK) goto done;
    for (j = 0; j < train.n; j++) {
        if (train.u[j] > maxu) maxu = train.u[j];
        if (train.i[j] > maxi) maxi = train.i[j];
    }
    {
        /* each user at most once in the test file, and every training user there */
        int64_t span, mu = maxu;
        char *in_test;
        for (j = 0; j < test.n; j++)
            if (test.u[j] > mu) mu = test.u[j];
        if (mu >= train.n + test.n) { /* the split's ids are dense: every user has a line */
            rc = ncf__fail(NCF_ERR_DATA,
                           "%s: user id %lld with only %lld lines: the split's ids must be 0-based and dense", prefix,
                           (long long)mu, (long long)(train.n + test.n));
            goto done;
        }
        span = mu + 1;
        in_test = NCF__ZNEW(char, span);
        if (!in_test) {
            rc = ncf__fail(NCF_ERR_NOMEM, "out of memory");
            goto done;
        }
        for (j = 0; j < test.n && rc == NCF_OK; j++) {
            if (in_test[test.u[j]])
                rc = ncf__fail(NCF_ERR_DATA, "%s:%lld: user %lld has a second test rating", path[1], (long long)j + 1,
                               (long long)test.u[j]);
            in_test[test.u[j]] = 1;
            if (test.i[j] > maxi) maxi = test.i[j];
        }
        for (j = 0; j < train.n && rc == NCF_OK; j++)
            if (!in_test[train.u[j]])
                rc = ncf__fail(NCF_ERR_DATA, "%s:%lld: user %lld has no line in %s", path[0], (long long)j + 1,
                               (long long)train.u[j], path[1]);
        NCF_FREE(in_test);
        maxu = mu;
        if (rc != NCF_OK) goto done;
    }
    if (!sample_negs && (rc = ncf__parse_negatives(src, &test, &neg, &per_line, &maxi, &neg_line)) != NCF_OK) goto done;
    if (maxu >= INT32_MAX || maxi >= INT32_MAX || maxi >= train.n + test.n + (int64_t)test.n * per_line) {
        rc = ncf__fail(NCF_ERR_DATA, "%s: item id %lld is beyond the split's dense ids", prefix, (long long)maxi);
        goto done;
    }
    /* test ratings come last in time, so the generic split holds them out */
    if ((rc = ncf__triples_reserve(&all, train.n + test.n, 0, 0)) != NCF_OK) goto done;
    for (j = 0; j < train.n; j++) all.u[j] = train.u[j], all.i[j] = train.i[j], all.t[j] = 0;
    for (j = 0; j < test.n; j++) all.u[train.n + j] = test.u[j], all.i[train.n + j] = test.i[j], all.t[train.n + j] = 1;
    /* (its training file's timestamps are not used: a validation item is drawn by the seed) */
    memset(&bo, 0, sizeof bo);
    bo.holdout = holdout == NCF_HOLDOUT_NONE ? NCF_HOLDOUT_NONE : NCF__HOLDOUT_SPLIT;
    bo.fixed_users = (int)maxu + 1, bo.fixed_items = (int)maxi + 1;
    if ((rc = ncf__build(ds, all.u, all.i, all.t, train.n + test.n, &bo)) != NCF_OK) goto done;
    strcpy(ds->report.sep, "\t");
    for (k = 0; k < 4; k++) snprintf(ds->report.columns[k], sizeof ds->report.columns[k], "column %d", k + 1);
    if (holdout == NCF_HOLDOUT_NONE) goto done; /* nothing held out: no candidates */
    if (sample_negs) {
        if ((rc = ncf_sample_eval_negatives(ds, sample_negs, seed)) != NCF_OK) ncf_dataset_free(ds);
    } else if ((rc = ncf__check_negatives(ds, &test, neg, per_line, neg_line, path[2])) != NCF_OK) {
        ncf_dataset_free(ds);
    } else {
        ds->eval_neg = NCF__NEW(int32_t, (size_t)ds->num_users * (size_t)per_line);
        if (!ds->eval_neg) {
            ncf_dataset_free(ds);
            rc = ncf__fail(NCF_ERR_NOMEM, "out of memory");
            goto done;
        }
        for (j = 0; j < test.n; j++)
            memcpy(ds->eval_neg + (size_t)test.u[j] * per_line, neg + (size_t)j * per_line,
                   sizeof(int32_t) * (size_t)per_line);
        ds->num_eval_neg = per_line;
    }
done:
    ncf__triples_free(&train);
    ncf__triples_free(&test);
    ncf__triples_free(&all);
    NCF_FREE(neg), NCF_FREE(neg_line);
    return rc;
}

/* The paper split from its three files, PREFIX.train.rating and the rest. */
static int ncf__load_ncf(ncf_dataset *ds, const char *prefix, int sample_negs, uint64_t seed, int holdout)
{
    char path[3][4200];
    ncf__split_src src;
    int k;
    memset(&src, 0, sizeof src);
    for (k = 0; k < 3; k++) {
        if (snprintf(path[k], sizeof path[k], "%s%s", prefix, ncf__split_suffix[k]) >= (int)sizeof path[k])
            return ncf__fail(NCF_ERR_ARG, "%s: path too long", prefix);
        src.name[k] = path[k];
    }
    return ncf__load_split(ds, prefix, &src, sample_negs, seed, holdout);
}

/* The prefix of a split whose files are PREFIX and suffix[0..3), when path names one (PREFIX,
   or one of its files; PREFIX alone when its first file is there), else NULL: the paper's
   split (ncf__split_suffix) or a saved one (ncf__saved_suffix). */
static const char *ncf__split_prefix(const char *path, const char *const *suffix, char *prefix, size_t size)
{
    char probe[4216];
    int k;
    if (strlen(path) >= size) return NULL;
    strcpy(prefix, path);
    for (k = 0; k < 3; k++)
        if (ncf__ends_with(prefix, suffix[k])) {
            prefix[strlen(prefix) - strlen(suffix[k])] = 0;
            return prefix;
        }
    if (snprintf(probe, sizeof probe, "%s%s", path, suffix[0]) >= (int)sizeof probe) return NULL;
    return ncf__file_exists(probe) ? prefix : NULL;
}

/* ---- a split saved for others, and read back ---- */

/* Id k of one side as a TSV field: quoted where it holds a tab, a quote or a blank at either
   end (a text id that would read back otherwise). */
static int ncf__write_id(ncf__outfile *out, const ncf_dataset *d, int side, int k)
{
    char id[NCF_MAX_ID_BYTES + 1];
    ncf__ids t = ncf__dataset_ids(d, side);
    int n, q;
    if ((n = ncf__ids_name(&t, k, id, sizeof id)) < 0) return ncf__fail(NCF_ERR_ARG, "ncf_save_split: no id for %d", k);
    if (strpbrk(id, "\r\n"))
        return ncf__fail(NCF_ERR_DATA, "ncf_save_split: the %s id '%s' holds a line end", side ? "item" : "user",
                         ncf__shown(id, id + n));
    if (!strpbrk(id, "\t\"") && id[0] != ' ' && id[n - 1] != ' ') return ncf__outfile_write(out, id, (size_t)n);
    if (ncf__outfile_write(out, "\"", 1) != NCF_OK) return NCF_ERR_IO;
    for (q = 0; q < n; q++)
        if (ncf__outfile_write(out, id + q, 1) != NCF_OK ||
            (id[q] == '"' && ncf__outfile_write(out, "\"", 1) != NCF_OK))
            return NCF_ERR_IO;
    return ncf__outfile_write(out, "\"", 1);
}

/* One of the split's files: each user's items of a part (0 training, 1 validation, 2 test). */
static int ncf__write_part(ncf__outfile *out, const ncf_dataset *d, int part)
{
    int u, rc = NCF_OK;
    for (u = 0; u < d->num_users && rc == NCF_OK; u++) {
        int64_t n, j;
        const int32_t *it = part == 0 ? d->items + d->user_ptr[u]
                                      : ncf__held_list(d, part == 1 ? NCF_EVAL_VALIDATION : NCF_EVAL_TEST, u, &n);
        if (part == 0) n = d->user_ptr[u + 1] - d->user_ptr[u];
        for (j = 0; j < n && rc == NCF_OK; j++)
            if ((rc = ncf__write_id(out, d, 0, u)) == NCF_OK && (rc = ncf__outfile_write(out, "\t", 1)) == NCF_OK &&
                (rc = ncf__write_id(out, d, 1, it[j])) == NCF_OK)
                rc = ncf__outfile_write(out, "\n", 1);
    }
    return rc;
}

NCFDEF int ncf_save_split(const ncf_dataset *d, const char *prefix)
{
    ncf__outfile *out[3] = {NULL, NULL, NULL};
    char path[4200];
    int part, rc = NCF_OK;
    if (!d || !d->user_ptr || !prefix)
        return ncf__fail(NCF_ERR_ARG, "ncf_save_split: need a loaded dataset and a prefix");
    if (ncf__is_shard(d)) return ncf__fail(NCF_ERR_ARG, "ncf_save_split: the dataset is a shard");
    if (strlen(prefix) + 16 > sizeof path) return ncf__fail(NCF_ERR_ARG, "%s: path too long", prefix);
    for (part = 0; part < 3 && rc == NCF_OK; part++) { /* every file written before any replaces its path */
        if (part == 1 && !ncf__has_val(d)) continue;
        snprintf(path, sizeof path, "%s%s", prefix, ncf__saved_suffix[part]); /* (fits: checked above) */
        if ((rc = ncf__outfile_open(&out[part], path)) == NCF_OK) rc = ncf__write_part(out[part], d, part);
    }
    if ((rc = ncf__outfiles_commit(out, 3, rc)) != NCF_OK || ncf__has_val(d)) return rc;
    /* a split without validation: an earlier split's validation file under this prefix would be
       read back as this one's */
    snprintf(path, sizeof path, "%s%s", prefix, ncf__saved_suffix[1]); /* (fits: checked above) */
    if (ncf__file_exists(path) && remove(path) != 0)
        return ncf__fail(NCF_ERR_IO, "%s: an earlier split's validation file cannot be removed (%s)", path,
                         ncf__os_reason());
    return NCF_OK;
}

/* A saved split read back: its files joined in memory, each line given its part as a third
   field (a timestamp the build takes as the part), then built as one log. */
/* A saved split from its parts in memory (training, validation or NULL, test): their lines joined,
   each given its part as a third field (a timestamp the build takes as the part), then built as
   one log (the fuzzers' way in, beside the files'). */
static int ncf__build_saved(ncf_dataset *ds, const char *prefix, const char *const *buf, const size_t *len,
                            const ncf_dataset_opts *given)
{
    ncf_dataset_opts o = *given;
    char *joined;
    size_t total = 0, j, at = 0;
    int part, rc;
    ncf__parsed P;
    for (part = 0; part < 3; part++) total += 4 * len[part] + 4;
    if (!(joined = NCF__NEW(char, total))) return ncf__fail(NCF_ERR_NOMEM, "%s: out of memory", prefix);
    for (part = 0; part < 3; part++) /* (3 bytes added a line of at least 1) */
        for (j = 0; j < len[part];) {
            size_t e = j;
            while (e < len[part] && buf[part][e] != '\n' && buf[part][e] != '\r') e++;
            if (e > j) {
                memcpy(joined + at, buf[part] + j, e - j), at += e - j;
                joined[at++] = '\t', joined[at++] = (char)('0' + part), joined[at++] = '\n';
            }
            for (j = e; j < len[part] && (buf[part][j] == '\n' || buf[part][j] == '\r'); j++) {}
        }
    o.sep = "\t", o.header = NCF_HEADER_NO, o.holdout = NCF_HOLDOUT_SAVED, o.min_rating = -HUGE_VALF;
    o.columns[NCF_COL_USER] = "1", o.columns[NCF_COL_ITEM] = "2", o.columns[NCF_COL_RATING] = "";
    o.columns[NCF_COL_TIME] = "3", o.columns[NCF_COL_STRENGTH] = NULL, o.weighting = NCF_WEIGHT_NONE;
    o.validation = buf[1] != NULL;
    rc = ncf__parse_log(prefix, joined, at, &o, &P);
    NCF_FREE(joined);
    return rc == NCF_OK ? ncf__build_log(ds, prefix, &o, &P) : rc;
}

/* A saved split read back from its files, PREFIX.train.tsv and the rest (the validation's if
   there). */
static int ncf__load_saved(ncf_dataset *ds, const char *prefix, const ncf_dataset_opts *given)
{
    char path[4216], *buf[3] = {NULL, NULL, NULL};
    size_t len[3] = {0, 0, 0};
    int part, rc = NCF_OK;
    for (part = 0; part < 3 && rc == NCF_OK; part++) {
        if (snprintf(path, sizeof path, "%s%s", prefix, ncf__saved_suffix[part]) >= (int)sizeof path) {
            rc = ncf__fail(NCF_ERR_ARG, "%s: path too long", prefix);
            break;
        }
        if (part == 1 && !ncf__file_exists(path)) continue;
        rc = ncf__read_file(path, &buf[part], &len[part], NULL);
    }
    if (rc == NCF_OK) rc = ncf__build_saved(ds, prefix, (const char *const *)buf, len, given);
    for (part = 0; part < 3; part++) NCF_FREE(buf[part]);
    return rc;
}

NCFDEF int ncf_load_dataset(ncf_dataset *ds, const char *path, const ncf_dataset_opts *opts)
{
    ncf_dataset_opts o = opts ? *opts : ncf_dataset_opts_default();
    char prefix[4200];
    char *buf;
    size_t len;
    int rc;
    if (!ds || !path) return ncf__fail(NCF_ERR_ARG, "ncf_load_dataset: NULL dataset or path");
    memset(ds, 0, sizeof *ds);
    if (strlen(path) >= sizeof prefix) return ncf__fail(NCF_ERR_ARG, "%s: path too long", path);
    if (o.format == NCF_FORMAT_AUTO && ncf__split_prefix(path, ncf__saved_suffix, prefix, sizeof prefix)) {
        if (NCF__MANY(o.holdout) || o.weighting != NCF_WEIGHT_NONE)
            return ncf__fail(NCF_ERR_ARG, "%s: a saved split holds out its own items, unweighted", prefix);
        return ncf__load_saved(ds, prefix, &o);
    }
    if (o.format == NCF_FORMAT_NCF ||
        (o.format == NCF_FORMAT_AUTO && ncf__split_prefix(path, ncf__split_suffix, prefix, sizeof prefix))) {
        if (!ncf__split_prefix(path, ncf__split_suffix, prefix, sizeof prefix)) strcpy(prefix, path);
        if (o.eval_negatives < 0) return ncf__fail(NCF_ERR_ARG, "ncf_load_dataset: negative eval_negatives");
        if (NCF__MANY(o.holdout))
            return ncf__fail(NCF_ERR_ARG, "%s: the paper split holds out its own test items (holdout %d)", prefix,
                             o.holdout);
        if (o.weighting != NCF_WEIGHT_NONE) /* (its positives are the paper's: every rating counts 1) */
            return ncf__fail(NCF_ERR_ARG, "%s: the paper split is read unweighted; weigh a delimited log", prefix);
        rc = ncf__load_ncf(ds, prefix, o.eval_negatives, o.seed, o.holdout);

    } else {
        if ((int)o.format < NCF_FORMAT_AUTO || (int)o.format > NCF_FORMAT_NCF)
            return ncf__fail(NCF_ERR_ARG, "ncf_load_dataset: unknown format %d", (int)o.format);
        ncf__parsed P;
        if ((rc = ncf__read_file(path, &buf, &len, NULL)) != NCF_OK) return rc;
        rc = ncf__parse_log(path, buf, len, &o, &P);
        NCF_FREE(buf); /* before the build: the file and the dataset are never both held */
        if (rc == NCF_OK && (rc = ncf__build_log(ds, path, &o, &P)) == NCF_OK) rc = ncf__log_negatives(ds, path, &o);
    }
    return rc == NCF_OK ? ncf__load_validation(ds, path, &o) : rc;
}
#endif /* NCF_NO_STDIO */

#endif /* NCF_INFERENCE_ONLY */

/* ---- >>dataset (src/dataset.c) --------------------------------------------------------------- */
#ifndef NCF_INFERENCE_ONLY /* the whole stage: a device only serves */
/* ---- >>split: triples to a dataset: filters, hold-outs, validation, negatives, synthetic -- */

static int ncf__cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Sorts key[0..n) stably by key >> shift0 with tmp[n]: an LSD radix sort, 8 bits a pass,
   only as many passes as the largest key needs. */
static void ncf__radix_sort(uint64_t *key, uint64_t *tmp, size_t n, int shift0)
{
    uint64_t top = 0, *src = key, *dst = tmp, *t;
    size_t b;
    int shift;
    for (b = 0; b < n; b++) top |= key[b] >> shift0;
    for (shift = shift0; shift < 64 && (top >> (shift - shift0)) != 0; shift += 8) {
        size_t count[257] = {0};
        int d;
        for (b = 0; b < n; b++) count[((src[b] >> shift) & 255) + 1]++;
        for (d = 0; d < 256; d++) count[d + 1] += count[d];
        for (b = 0; b < n; b++) dst[count[(src[b] >> shift) & 255]++] = src[b];
        t = src, src = dst, dst = t;
    }
    if (src != key) memcpy(key, src, sizeof *key * n);
}

/* Sorts and removes duplicates; returns the new length. */
static int64_t ncf__sort_unique_i64(int64_t *v, int64_t n)
{
    int64_t i, k = 0;
    ncf__sort(v, (size_t)n, sizeof *v, ncf__cmp_i64);
    for (i = 0; i < n; i++)
        if (k == 0 || v[i] != v[k - 1]) v[k++] = v[i];
    return k;
}

/* Whether every user holding out an item in held[] has n unrated items to draw from. */
static int ncf__negatives_possible(const ncf_dataset *ds, const int32_t *held, int n, const char *what)
{
    int u;
    for (u = 0; u < ds->num_users; u++)
        if (held[u] >= 0 && ncf__num_unrated(ds, u) == 0)
            return ncf__fail(NCF_ERR_DATA,
                             "user %s rated all %d items: none is left to rank the held-out one against "
                             "(drop the user, or hold nothing out)",
                             ncf__user_name(ds, u, 0), ds->num_items);
        else if (held[u] >= 0 && ncf__num_unrated(ds, u) < n)
            return ncf__fail(NCF_ERR_DATA,
                             "user %s rated %lld of %d items: fewer than %d unrated items to use as %s "
                             "negatives (ask for fewer)",
                             ncf__user_name(ds, u, 0), (long long)(ds->num_items - ncf__num_unrated(ds, u)),
                             ds->num_items, n, what);
    return NCF_OK;
}

/* n distinct negatives into neg[(u - lo)*n..] for each user u in [lo, hi) with an item in held[],
   drawn among the items it never rated; r is scratch of 2n per thread (ncf__threads()).
   Allocates nothing. */
static void ncf__draw_negatives(const ncf_dataset *ds, const int32_t *held, int n, uint64_t seed, int64_t *scratch,
                                int lo, int hi, int32_t *neg)
{
    int u, T = ncf__threads();
    (void)T; /* (without OpenMP) */
    NCF__OMP(parallel num_threads(ncf__team_of(1, T)))
    {
        /* ranks drawn with replacement, deduplicated, topped up until n distinct */
        int t = 0;
        int64_t *r;
#ifdef _OPENMP
        t = omp_get_thread_num();
#endif
        r = scratch + (size_t)t * 2 * n;
        NCF__OMP(for schedule(dynamic, 64))
        for (u = lo; u < hi; u++) {
            int64_t have = 0, j, draw = 0, avail = ncf__num_unrated(ds, u);
            if (held[u] < 0) continue;
            while (have < n) {
                while (have < 2 * (int64_t)n)
                    r[have++] = ncf__below(ncf__hash3(seed, (uint64_t)u, (uint64_t)draw++), (uint32_t)avail);
                have = ncf__sort_unique_i64(r, have);
                if (have > n) {
                    /* keep n of them, chosen by draw order rather than by value */
                    for (j = 0; j < have; j++) {
                        int64_t k = j + ncf__below(ncf__hash3(seed, ~(uint64_t)u, (uint64_t)j), (uint32_t)(have - j));
                        int64_t x = r[j];
                        r[j] = r[k];
                        r[k] = x;
                    }
                    have = n;
                }
            }
            for (j = 0; j < n; j++) neg[(size_t)(u - lo) * n + j] = ncf__nth_unrated(ds, u, r[j]);
        }
    }
}

/* ncf_sample_eval_negatives' draw for the users [lo, hi), rows from lo (the others own none). */
static int ncf__eval_negatives(ncf_dataset *ds, int n, uint64_t seed, int lo, int hi)
{
    int32_t *neg;
    int64_t *scratch;
    int rc;
    if ((rc = ncf__negatives_possible(ds, ds->test_item, n, "eval")) != NCF_OK) return rc;
    neg = NCF__NEW(int32_t, (size_t)(hi - lo) * (size_t)n + 1);
    scratch = NCF__NEW(int64_t, (size_t)ncf__threads() * 2 * (size_t)n);
    if (!neg || !scratch) {
        NCF_FREE(neg), NCF_FREE(scratch);
        return ncf__fail(NCF_ERR_NOMEM, "out of memory for %d eval negatives per user", n);
    }
    ncf__draw_negatives(ds, ds->test_item, n, seed ^ NCF__TAG_EVAL, scratch, lo, hi, neg);
    NCF_FREE(scratch);
    NCF_FREE(ds->eval_neg);
    ds->eval_neg = neg;
    ds->num_eval_neg = n;
    return NCF_OK;
}

NCFDEF int ncf_sample_eval_negatives(ncf_dataset *ds, int n, uint64_t seed)
{
    if (!ds || !ds->user_ptr || n <= 0)
        return ncf__fail(NCF_ERR_ARG, "ncf_sample_eval_negatives: need a loaded dataset and n > 0");
    if (ncf__is_shard(ds))
        return ncf__fail(NCF_ERR_ARG,
                         "ncf_sample_eval_negatives: the dataset is a shard; draw them before ncf_mpi_shard");
    if (ds->test_ptr)
        return ncf__fail(NCF_ERR_ARG, "ncf_sample_eval_negatives: a split of many items per user is ranked in full");
    return ncf__eval_negatives(ds, n, seed, 0, ds->num_users);
}

/* ncf_hold_out_validation's work, its negatives drawn for the users [lo, hi) (rows from lo). */
static int ncf__hold_out_val(ncf_dataset *ds, int n, uint64_t seed, int lo, int hi)
{
    int32_t *val, *neg;
    float *vw = NULL;
    int64_t *scratch, w = 0, start = 0;
    int u, rc;
    val = NCF__NEW(int32_t, ds->num_users ? ds->num_users : 1);
    neg = NCF__NEW(int32_t, (size_t)(hi - lo) * (size_t)n + 1);
    scratch = NCF__NEW(int64_t, (size_t)ncf__threads() * 2 * (size_t)n);
    if (ds->weight) vw = NCF__NEW(float, ds->num_users ? ds->num_users : 1);
    if (!val || !neg || !scratch || (ds->weight && !vw)) {
        NCF_FREE(val), NCF_FREE(neg), NCF_FREE(scratch), NCF_FREE(vw);
        return ncf__fail(NCF_ERR_NOMEM, "out of memory for a validation set");
    }
    for (u = 0; u < ds->num_users; u++) { /* a user keeps one training item at least */
        const int32_t *p = ds->items + ds->user_ptr[u];
        int64_t c = ds->user_ptr[u + 1] - ds->user_ptr[u];
        int32_t r = ds->recent_item ? ds->recent_item[u] : -1;
        val[u] = c < 2 ? -1 : r >= 0 ? r : p[ncf__below(ncf__hash3(seed ^ NCF__TAG_VAL, (uint64_t)u, 0), (uint32_t)c)];
    }
    /* moving an item from training to validation leaves the unrated items as they were */
    if ((rc = ncf__negatives_possible(ds, val, n, "validation")) != NCF_OK) {
        NCF_FREE(val), NCF_FREE(neg), NCF_FREE(scratch), NCF_FREE(vw);
        return rc;
    }
    for (u = 0; u < ds->num_users; u++) { /* the training lists without it, in place */
        int64_t k, end = ds->user_ptr[u + 1];
        if (vw) vw[u] = 0;
        for (k = start; k < end; k++)
            if (ds->items[k] != val[u]) {
                if (ds->weight) ds->weight[w] = ds->weight[k];
                ds->items[w++] = ds->items[k];
            } else if (vw) vw[u] = ds->weight[k];
        start = end, ds->user_ptr[u + 1] = w;
    }
    ds->num_train = w;
    ncf__fill_train_user(ds);
    ds->val_item = val, ds->val_weight = vw;
    ncf__draw_negatives(ds, val, n, seed ^ NCF__TAG_VALNEG, scratch, lo, hi, neg);
    NCF_FREE(scratch);
    ds->val_neg = neg;
    ds->num_val_neg = n;
    return NCF_OK;
}

NCFDEF int ncf_hold_out_validation(ncf_dataset *ds, int n, uint64_t seed)
{
    if (!ds || !ds->user_ptr || n <= 0)
        return ncf__fail(NCF_ERR_ARG, "ncf_hold_out_validation: need a loaded dataset and n > 0");
    if (ncf__is_shard(ds))
        return ncf__fail(NCF_ERR_ARG, "ncf_hold_out_validation: the dataset is a shard; hold out before ncf_mpi_shard");
    if (ds->val_item)
        return ncf__fail(NCF_ERR_ARG, "ncf_hold_out_validation: the dataset has a validation set already");
    if (ds->test_ptr)
        return ncf__fail(NCF_ERR_ARG,
                         "ncf_hold_out_validation: a split of many items per user holds its validation "
                         "items out as it loads (ncf_dataset_opts.validation)");
    return ncf__hold_out_val(ds, n, seed, 0, ds->num_users);
}

/* One rating of a user after remapping: sorted by item to collapse duplicates,
   and by (time, seq) to find the latest. seq is the line order within the user. */
typedef struct {
    int32_t item;
    uint32_t seq;
    int64_t time;
} ncf__interaction;

static int ncf__cmp_interaction(const void *a, const void *b)
{
    const ncf__interaction *x = (const ncf__interaction *)a, *y = (const ncf__interaction *)b;
    if (x->item != y->item) return (x->item > y->item) - (x->item < y->item);
    if (x->time != y->time) return (x->time > y->time) - (x->time < y->time);
    return (x->seq > y->seq) - (x->seq < y->seq);
}

static int ncf__later(const ncf__interaction *a, const ncf__interaction *b)
{
    return a->time > b->time || (a->time == b->time && a->seq > b->seq);
}

/* Dense ids in ascending raw order: dense[j] for raw[j], and *raw_out the distinct raw ids.
   Sorting (radix, on a copy) where a hash map would be: every allocation is checked, and
   nothing global is touched, so two threads may load datasets at once. */
static int ncf__indices_of_ids(const int64_t *raw, int64_t n, int32_t *dense, int64_t **raw_out, int *count_out)
{
    uint64_t *v = NCF__NEW(uint64_t, n ? n : 1), *tmp = NCF__NEW(uint64_t, n ? n : 1);
    int64_t j, k = 0;
    if (!v || !tmp) {
        NCF_FREE(v), NCF_FREE(tmp);
        return ncf__fail(NCF_ERR_NOMEM, "out of memory remapping %lld ids", (long long)n);
    }
    for (j = 0; j < n; j++) v[j] = (uint64_t)raw[j];
    ncf__radix_sort(v, tmp, (size_t)n, 0);
    NCF_FREE(tmp);
    for (j = 0; j < n; j++)
        if (k == 0 || v[j] != v[k - 1]) v[k++] = v[j];
    if (k > INT32_MAX) {
        NCF_FREE(v);
        return ncf__fail(NCF_ERR_DATA, "more than 2^31 distinct ids");
    }
    for (j = 0; j < n; j++) /* ids are below 2^62: as int64 they sort the same */
        dense[j] = ncf__find_id((const int64_t *)v, NULL, (int)k, raw[j]);
    if (k < n) { /* give back the room of the duplicates */
        uint64_t *shrunk = (uint64_t *)NCF_REALLOC(v, sizeof *v * (size_t)(k ? k : 1));
        if (shrunk) v = shrunk;
    }
    *raw_out = (int64_t *)v; /* the distinct ids, ascending */
    *count_out = (int)k;
    return NCF_OK;
}

/* Renumbers the ids marked in keep[0..n) densely, in the same order: map[k] is the new index
   or -1; raw[] is compacted alike. Returns how many are kept. */
static int ncf__keep_ids(const uint8_t *keep, int n, int32_t *map, int64_t *raw)
{
    int k, m = 0;
    for (k = 0; k < n; k++) {
        map[k] = keep[k] ? m : -1;
        if (keep[k]) raw[m++] = raw[k];
    }
    return m;
}

/* Which of u's k distinct items (sorted by item) is its test item, or -1. */
static int64_t ncf__pick_held(const ncf__interaction *r, int64_t k, int holdout, uint64_t seed, int u)
{
    int64_t i, last = 0;
    if (holdout == NCF_HOLDOUT_NONE || k < (holdout == NCF__HOLDOUT_SPLIT ? 1 : 2)) return -1;
    if (holdout == NCF_HOLDOUT_RANDOM)
        return ncf__below(ncf__hash3(seed ^ NCF__TAG_HOLDOUT, (uint64_t)u, 0), (uint32_t)k);
    for (i = 1; i < k; i++)
        if (ncf__later(&r[i], &r[last])) last = i;
    return last;
}

/* Positives per item from kept users (cnt_i), and per kept user on kept items (cnt_u), over
   the ranks when the build is distributed. */
static int ncf__count_kept(const int32_t *du, const int32_t *di, const uint8_t *pos, int64_t n, const uint8_t *keep_u,
                           const uint8_t *keep_i, int U, int I, int64_t *cnt_u, int64_t *cnt_i,
                           const ncf__build_opts *bo)
{
    int64_t j;
    int rc;
    memset(cnt_u, 0, sizeof(int64_t) * (size_t)U), memset(cnt_i, 0, sizeof(int64_t) * (size_t)I);
    for (j = 0; j < n; j++)
        if ((!pos || pos[j]) && keep_u[du[j]]) {
            cnt_i[di[j]]++;
            if (keep_i[di[j]]) cnt_u[du[j]]++;
        }
    if ((rc = NCF__REDUCE(bo, cnt_u, U, NCF__SUM_I64)) != NCF_OK) return rc;
    return NCF__REDUCE(bo, cnt_i, I, NCF__SUM_I64);
}

/* Kept users who rated every kept item: dropped, as no item is left to rank their held-out
   one against or to draw as a negative. Only users with as many positives as there are kept
   items can be; their records are gathered in one pass (at[], of n + U + 1) and their distinct
   items marked with the user's stamp (mark[], of I), so a round is O(n). Returns how many. */
static int ncf__drop_users_of_every_item(const int32_t *du, const int32_t *di, const uint8_t *pos, int64_t n, int U,
                                         int I, const int64_t *cnt_u, uint8_t *keep_u, const uint8_t *keep_i,
                                         int32_t *mark, int64_t *at)
{
    int64_t j, kept_items = 0, *start = at + n;
    int u, i, dropped = 0;
    for (i = 0; i < I; i++) kept_items += keep_i[i], mark[i] = -1;
    memset(start, 0, sizeof(int64_t) * ((size_t)U + 1));
    for (j = 0; j < n; j++) /* (a candidate: kept, with at least kept_items positives on kept items) */
        if ((!pos || pos[j]) && keep_i[di[j]] && keep_u[du[j]] && cnt_u[du[j]] >= kept_items) start[du[j] + 1]++;
    for (u = 0; u < U; u++) start[u + 1] += start[u];
    for (j = 0; j < n; j++)
        if ((!pos || pos[j]) && keep_i[di[j]] && keep_u[du[j]] && cnt_u[du[j]] >= kept_items) at[start[du[j]]++] = j;
    for (u = U; u > 0; u--) start[u] = start[u - 1]; /* (the fill moved each start to the next's) */
    start[0] = 0;
    for (u = 0; u < U; u++) {
        int64_t distinct = 0, k;
        for (k = start[u]; k < start[u + 1]; k++)
            if (mark[di[at[k]]] != u) mark[di[at[k]]] = u, distinct++;
        if (start[u + 1] > start[u] && distinct == kept_items) keep_u[u] = 0, dropped++;
    }
    return dropped;
}

#define NCF__FILTER_ROUNDS 64 /* more rounds of the filters than a real log needs (a k-core of ml-20m takes a few) */

/* Which users and items to keep, and the report's counts of what each filter dropped: users
   with positives, at least min_ratings of them; items with at least min_item_ratings from the
   users kept (a user left with none goes too); with kcore, both again until neither drops
   anything; and no user who rated every item kept. cnt: scratch of U, then I, int64. */
static int ncf__filter_ids(const int32_t *du, const int32_t *di, const uint8_t *pos, int64_t n, int U, int I,
                           const ncf__build_opts *bo, int64_t *cnt, uint8_t *keep_u, uint8_t *keep_i, uint8_t *any_i,
                           ncf_load_report *rep)
{
    int64_t j, *cnt_i = NCF__NEW(int64_t, I ? I : 1), *at = NCF__NEW(int64_t, (size_t)n + (size_t)U + 1);
    int32_t *mark = NCF__NEW(int32_t, I ? I : 1);
    int u, i, rc = NCF_OK;
    if (!cnt_i || !mark || !at) rc = ncf__fail(NCF_ERR_NOMEM, "out of memory for %d items' counts", I);
    if ((rc = ncf__build_agree(bo, rc)) != NCF_OK) goto done;
    for (j = 0; j < n; j++)
        if (!pos || pos[j]) cnt[du[j]]++, any_i[di[j]] = 1;
    rep->users_read = U, rep->items_read = I, rep->interactions = n;
    for (j = 0; j < n; j++) rep->below_min_rating += pos && !pos[j];
    if ((rc = NCF__REDUCE(bo, cnt, U, NCF__SUM_I64)) != NCF_OK || (rc = NCF__REDUCE(bo, any_i, I, NCF__ANY_U8)) ||
        (rc = NCF__REDUCE(bo, &rep->interactions, 1, NCF__SUM_I64)) ||
        (rc = NCF__REDUCE(bo, &rep->below_min_rating, 1, NCF__SUM_I64)))
        goto done;
    for (i = 0; i < I; i++) rep->items_below_min_rating += !any_i[i];
    for (u = 0; u < U; u++) {
        keep_u[u] = cnt[u] > 0 && cnt[u] >= bo->min_ratings;
        rep->users_below_min_rating += cnt[u] == 0;
        if (cnt[u] > 0 && !keep_u[u]) rep->users_few_ratings++, rep->few_ratings += cnt[u];
    }
    for (i = 0; i < I; i++) keep_i[i] = any_i[i];
    for (rep->filter_rounds = 1;; rep->filter_rounds++) {
        int64_t dropped = 0;
        if ((rc = ncf__count_kept(du, di, pos, n, keep_u, keep_i, U, I, cnt, cnt_i, bo)) != NCF_OK) break;
        for (i = 0; i < I; i++) /* items only dropped users rated go with them */
            if (keep_i[i] && cnt_i[i] == 0) keep_i[i] = 0, rep->items_few_ratings++;
        if (rep->filter_rounds == 1 || bo->kcore)
            for (i = 0; i < I; i++)
                if (keep_i[i] && cnt_i[i] < bo->min_item_ratings)
                    keep_i[i] = 0, dropped = 1, rep->items_few_item_ratings++, rep->few_item_ratings += cnt_i[i];
        if (dropped && (rc = ncf__count_kept(du, di, pos, n, keep_u, keep_i, U, I, cnt, cnt_i, bo)) != NCF_OK) break;
        for (u = 0; u < U; u++) /* users: a positive left, and (kcore) min_ratings of them */
            if (keep_u[u] && (cnt[u] == 0 || (bo->kcore && cnt[u] < bo->min_ratings)))
                keep_u[u] = 0, dropped = 1, rep->users_filtered_out++;
        if (!dropped) {
            dropped = ncf__drop_users_of_every_item(du, di, pos, n, U, I, cnt, keep_u, keep_i, mark, at);
            if ((rc = NCF__REDUCE(bo, &dropped, 1, NCF__SUM_I64)) != NCF_OK ||
                (rc = NCF__REDUCE(bo, keep_u, U, NCF__ALL_U8)) != NCF_OK)
                break;
            rep->users_every_item += (int)dropped;
        }
        if (!dropped) break;
        if (rep->filter_rounds == NCF__FILTER_ROUNDS) { /* (each round is O(n): a log cannot make them many) */
            rc = ncf__fail(NCF_ERR_DATA,
                           "the filters still drop users and items after %d rounds (each drop leaving "
                           "another user or item under its minimum, or with every item): loosen them",
                           NCF__FILTER_ROUNDS);
            break;
        }
    }
done:
    NCF_FREE(cnt_i), NCF_FREE(mark), NCF_FREE(at);
    return rc;
}

/* A positive's confidence from its strength s (the sum of its lines'). */
static double ncf__confidence(double s, int weighting, double alpha)
{
    return 1 + alpha * (weighting == NCF_WEIGHT_LOG ? log1p(s) : s);
}

/* ds->weight from the strengths of the records kept (gs, by each record's place in its user's
   group); fails, naming the pair, when a confidence passes NCF__MAX_CONFIDENCE. */
static int ncf__fill_weights(ncf_dataset *ds, const ncf__interaction *rec, const int64_t *start, const double *gs,
                             const ncf__build_opts *bo, ncf_load_report *rep)
{
    int u;
    if (!gs) return NCF_OK;
    if (!(ds->weight = NCF__NEW(float, ds->num_train ? ds->num_train : 1)))
        return ncf__fail(NCF_ERR_NOMEM, "out of memory for %lld weights", (long long)ds->num_train);
    rep->weight_min = HUGE_VAL, rep->weight_max = 0;
    for (u = 0; u < ds->num_users; u++) {
        int64_t i, n = ds->user_ptr[u + 1] - ds->user_ptr[u];
        for (i = 0; i < n; i++) {
            double c = ncf__confidence(gs[start[u] + rec[start[u] + i].seq], bo->weighting, bo->alpha);
            if (!(c <= NCF__MAX_CONFIDENCE))
                return ncf__fail(NCF_ERR_DATA,
                                 "a positive's confidence 1 + alpha f(strength) is %g, past %g: lower "
                                 "alpha, or weigh by log",
                                 c, NCF__MAX_CONFIDENCE);
            ds->weight[ds->user_ptr[u] + i] = (float)c;
            if (c < rep->weight_min) rep->weight_min = c;
            if (c > rep->weight_max) rep->weight_max = c;
        }
    }
    if (ds->num_train == 0) rep->weight_min = rep->weight_max = 0;
    return NCF_OK;
}

/* ---- a split of many items per user ---- */
enum { NCF__ROLE_TRAIN = 0, NCF__ROLE_VAL, NCF__ROLE_TEST }; /* a record's place, in this order */

/* A ratio split's order of a user's records: the last are held out. By time (then line) where
   the log has timestamps, else by a key the seed draws. */
typedef struct {
    uint64_t key;
    int64_t time;
    uint32_t seq;
    int32_t at;
} ncf__order;

static int ncf__cmp_order(const void *a, const void *b)
{
    const ncf__order *x = (const ncf__order *)a, *y = (const ncf__order *)b;
    if (x->key != y->key) return (x->key > y->key) - (x->key < y->key);
    if (x->time != y->time) return (x->time > y->time) - (x->time < y->time);
    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* How many of k records a ratio holds out: round(f k), at least 1, leaving 1 (none of k < 2). */
static int64_t ncf__ratio_count(int64_t k, double f)
{
    int64_t m = (int64_t)floor(f * (double)k + 0.5);
    return k < 2 ? 0 : m < 1 ? 1 : m > k - 1 ? k - 1 : m;
}

/* The ratio split's roles of one user's k records (sorted by item), into role[]. */
static void ncf__ratio_roles(const ncf__interaction *r, int64_t k, int u, const ncf__build_opts *bo, int timed,
                             ncf__order *o, uint8_t *role)
{
    int64_t i, m = ncf__ratio_count(k, bo->fraction), v = bo->validation ? ncf__ratio_count(k - m, bo->fraction) : 0;
    for (i = 0; i < k; i++) {
        o[i].key = timed ? 0 : ncf__hash3(bo->seed ^ NCF__TAG_HOLDOUT, (uint64_t)u, (uint64_t)r[i].item);
        o[i].time = r[i].time, o[i].seq = r[i].seq, o[i].at = (int32_t)i;
        role[i] = NCF__ROLE_TRAIN;
    }
    ncf__sort(o, (size_t)k, sizeof *o, ncf__cmp_order);
    for (i = k - m; i < k; i++) role[o[i].at] = NCF__ROLE_TEST;
    for (i = k - m - v; i < k - m; i++) role[o[i].at] = NCF__ROLE_VAL;
}

/* The cold-start split's roles of the items (I of them): round(fraction I) drawn by the seed
   for test, then as large a share of the rest for validation; every record takes its item's. */
static int ncf__item_roles(int I, const ncf__build_opts *bo, uint8_t *role)
{
    ncf__order *o = NCF__NEW(ncf__order, I ? I : 1);
    int64_t i, m = (int64_t)floor(bo->fraction * (double)I + 0.5), v;
    if (!o) return ncf__fail(NCF_ERR_NOMEM, "out of memory for a split of %d items", I);
    v = bo->validation ? (int64_t)floor(bo->fraction * (double)(I - m) + 0.5) : 0;
    for (i = 0; i < I; i++) {
        o[i].key = ncf__hash3(bo->seed ^ NCF__TAG_COLD, (uint64_t)i, 0);
        o[i].time = 0, o[i].seq = (uint32_t)i, o[i].at = (int32_t)i;
        role[i] = NCF__ROLE_TRAIN;
    }
    ncf__sort(o, (size_t)I, sizeof *o, ncf__cmp_order);
    for (i = 0; i < m + v && i < I; i++) role[o[i].at] = i < m ? NCF__ROLE_TEST : NCF__ROLE_VAL;
    NCF_FREE(o);
    return NCF_OK;
}

/* A time split's first held-out timestamps: test's (the cut-off, or the one a fraction of the
   records from the end) and validation's (a fraction of the records before test's from their end;
   INT64_MAX: none). times: the records' times, scratch of n. */
static void ncf__time_cutoffs(uint64_t *times, uint64_t *tmp, int64_t n, const ncf__build_opts *bo, int64_t *test,
                              int64_t *val)
{
    int64_t before = 0, j;
    for (j = 0; j < n; j++) times[j] ^= (uint64_t)1 << 63; /* (signed order as unsigned) */
    ncf__radix_sort(times, tmp, (size_t)n, 0);
    for (j = 0; j < n; j++) times[j] ^= (uint64_t)1 << 63;
    if (bo->holdout == NCF_HOLDOUT_CUTOFF) *test = bo->cutoff;
    else {
        j = (int64_t)floor((1 - bo->fraction) * (double)n);
        *test = (int64_t)times[j < n ? j : n - 1];
    }
    while (before < n && (int64_t)times[before] < *test) before++;
    j = (int64_t)floor((1 - bo->fraction) * (double)before);
    *val = bo->validation && before > 0 ? (int64_t)times[j < before ? j : before - 1] : INT64_MAX;
}

/* Holds out many records per user (NCF_HOLDOUT_RATIO, _TIME, _CUTOFF; _SAVED: a record's time
   is its role): each user's k[u] records at rec + start[u] are put in the order training,
   validation, test (each ascending by item), k[u] becoming its training count and nv[u], nt[u]
   the others'. A user left with validation records but none to train on trains on them; one
   left with test records only keeps them, counted, and is not evaluated. */
static int ncf__hold_out_many(ncf__interaction *rec, const int64_t *start, int64_t *k, int64_t *nv, int64_t *nt, int U,
                              int I, int timed, const ncf__build_opts *bo, ncf_load_report *rep)
{
    int64_t most = 1, total = 0, j, tcut = 0, vcut = INT64_MAX;
    ncf__order *o = NULL;
    ncf__interaction *tmp = NULL;
    uint8_t *role = NULL, *trained = NULL, *held = NULL, *item_role = NULL;
    uint64_t *times = NULL, *scratch = NULL;
    int u, i, rc = NCF_OK, whole = bo->holdout == NCF_HOLDOUT_ITEMS;
    if (bo->holdout != NCF_HOLDOUT_RATIO && !whole && !timed)
        return ncf__fail(NCF_ERR_ARG, "a time split needs a timestamp column, and the log has none");
    if (bo->holdout == NCF_HOLDOUT_SAVED) tcut = NCF__ROLE_TEST, vcut = NCF__ROLE_VAL; /* (a line's time is its role) */
    for (u = 0; u < U; u++) total += k[u], most = k[u] > most ? k[u] : most;
    o = NCF__NEW(ncf__order, most), tmp = NCF__NEW(ncf__interaction, most), role = NCF__NEW(uint8_t, most);
    trained = NCF__ZNEW(uint8_t, I ? I : 1), held = NCF__ZNEW(uint8_t, I ? I : 1);
    if (bo->holdout == NCF_HOLDOUT_TIME || bo->holdout == NCF_HOLDOUT_CUTOFF)
        times = NCF__NEW(uint64_t, total ? total : 1), scratch = NCF__NEW(uint64_t, total ? total : 1);
    if (whole && (!(item_role = NCF__NEW(uint8_t, I ? I : 1)) || (rc = ncf__item_roles(I, bo, item_role)) != NCF_OK)) {
        if (!item_role) rc = ncf__fail(NCF_ERR_NOMEM, "out of memory for a split of %d items", I);
        goto done;
    }
    if (!o || !tmp || !role || !trained || !held ||
        ((bo->holdout == NCF_HOLDOUT_TIME || bo->holdout == NCF_HOLDOUT_CUTOFF) && (!times || !scratch))) {
        rc = ncf__fail(NCF_ERR_NOMEM, "out of memory for a split of %lld positives", (long long)total);
        goto done;
    }
    if (times) {
        for (u = 0, j = 0; u < U; u++)
            for (i = 0; i < k[u]; i++) times[j++] = (uint64_t)rec[start[u] + i].time;
        if (total) ncf__time_cutoffs(times, scratch, total, bo, &tcut, &vcut);
        rep->cutoff = tcut, rep->validation_cutoff = vcut == INT64_MAX ? 0 : vcut;
    }
    for (u = 0; u < U; u++) {
        ncf__interaction *r = rec + start[u];
        int64_t c[3] = {0, 0, 0}, at[3];
        int g;
        if (bo->holdout == NCF_HOLDOUT_RATIO) ncf__ratio_roles(r, k[u], u, bo, timed, o, role);
        else if (whole)
            for (i = 0; i < k[u]; i++) role[i] = item_role[r[i].item];
        else
            for (i = 0; i < k[u]; i++)
                role[i] = r[i].time >= tcut ? NCF__ROLE_TEST : r[i].time >= vcut ? NCF__ROLE_VAL : NCF__ROLE_TRAIN;
        for (i = 0; i < k[u]; i++) c[role[i]]++;
        if (!whole && !c[NCF__ROLE_TRAIN] && c[NCF__ROLE_VAL]) /* (a user to evaluate has something to train on;
                                                                  a cold item's records stay held out whole) */
            for (i = 0; i < k[u]; i++)
                if (role[i] == NCF__ROLE_VAL) role[i] = NCF__ROLE_TRAIN;
        if (!whole && !c[NCF__ROLE_TRAIN] && c[NCF__ROLE_VAL])
            c[NCF__ROLE_TRAIN] = c[NCF__ROLE_VAL], c[NCF__ROLE_VAL] = 0;
        if (!c[NCF__ROLE_TRAIN] && c[NCF__ROLE_TEST]) /* (kept in the split, not evaluated) */
            rep->users_only_held_out++, rep->only_held_out += c[NCF__ROLE_TEST];
        for (g = 0, j = 0; g < 3; g++) at[g] = j, j += c[g];
        for (i = 0; i < k[u]; i++) { /* a stable partition by role */
            tmp[at[role[i]]++] = r[i];
            if (role[i] == NCF__ROLE_TRAIN) trained[r[i].item] = 1;
            else held[r[i].item] = 1;
        }
        memcpy(r, tmp, sizeof *r * (size_t)k[u]);
        k[u] = c[NCF__ROLE_TRAIN], nv[u] = c[NCF__ROLE_VAL], nt[u] = c[NCF__ROLE_TEST];
        rep->validation_interactions += nv[u], rep->test_interactions += nt[u];
    }
    for (i = 0; i < I; i++) rep->items_only_held_out += held[i] && !trained[i];
    for (u = 0, j = 0; u < U; u++) j += k[u];
    if (total && !j) /* (said here, where the reason is known: not by the sampler, later) */
        rc = ncf__fail(NCF_ERR_DATA,
                       "the %s split holds every one of the %lld positives out: nothing is left to train on (hold "
                       "out a smaller share, or cut later)",
                       bo->holdout == NCF_HOLDOUT_RATIO       ? "ratio"
                           : whole                            ? "items"
                           : bo->holdout == NCF_HOLDOUT_SAVED ? "saved"
                                                              : "time",
                       (long long)total);
done:
    NCF_FREE(o), NCF_FREE(tmp), NCF_FREE(role), NCF_FREE(trained), NCF_FREE(held), NCF_FREE(times), NCF_FREE(scratch);
    NCF_FREE(item_role);
    return rc;
}

/* The held-out lists of a many-item split from the records ncf__hold_out_many ordered. */
static int ncf__fill_many(ncf_dataset *ds, const ncf__interaction *rec, const int64_t *start, const int64_t *nv,
                          const int64_t *nt, const double *gs, const ncf__build_opts *bo)
{
    int64_t tv = 0, tt = 0, i, tr;
    int u;
    for (u = 0; u < ds->num_users; u++) tv += nv[u], tt += nt[u], ds->test_item[u] = -1;
    ds->test_ptr = NCF__NEW(int64_t, (size_t)ds->num_users + 1), ds->test_items = NCF__NEW(int32_t, tt ? tt : 1);
    if (bo->validation) {
        ds->val_ptr = NCF__NEW(int64_t, (size_t)ds->num_users + 1), ds->val_items = NCF__NEW(int32_t, tv ? tv : 1);
        if (gs) ds->val_weight = NCF__NEW(float, tv ? tv : 1);
    }
    if (!ds->test_ptr || !ds->test_items ||
        (bo->validation && (!ds->val_ptr || !ds->val_items || (gs && !ds->val_weight))))
        return ncf__fail(NCF_ERR_NOMEM, "out of memory for %lld held-out positives", (long long)(tv + tt));
    ds->test_ptr[0] = 0;
    if (ds->val_ptr) ds->val_ptr[0] = 0;
    for (u = 0; u < ds->num_users; u++) {
        const ncf__interaction *r = rec + start[u];
        tr = ds->user_ptr[u + 1] - ds->user_ptr[u];
        for (i = 0; i < nt[u]; i++) ds->test_items[ds->test_ptr[u] + i] = r[tr + nv[u] + i].item;
        ds->test_ptr[u + 1] = ds->test_ptr[u] + nt[u];
        if (!ds->val_ptr) continue;
        for (i = 0; i < nv[u]; i++) {
            ds->val_items[ds->val_ptr[u] + i] = r[tr + i].item;
            if (gs)
                ds->val_weight[ds->val_ptr[u] + i] =
                    (float)ncf__confidence(gs[start[u] + r[tr + i].seq], bo->weighting, bo->alpha);
        }
        ds->val_ptr[u + 1] = ds->val_ptr[u] + nv[u];
    }
    return NCF_OK;
}

/* ncf__build's working arrays, freed together. */
typedef struct {
    int32_t *du, *di;       /* each line's user and item index, -1 once dropped */
    int64_t *raw_u, *raw_i; /* the indices' ids (NULL: the ids are the indices) */
    int U, I;               /* users and items kept */
    int64_t *start, *kept;  /* [U + 1] each user's first record; how many it keeps */
    ncf__interaction *rec;  /* the positives, grouped by user */
    double *gs;             /* each record's strength, with a weighting */
    int32_t *test, *recent; /* [U] the held-out item; the latest kept one (timestamps) */
    int64_t *nv, *nt;       /* many held out a user: its validation and test counts */
} ncf__building;

static void ncf__building_free(ncf__building *b)
{
    NCF_FREE(b->du);
    NCF_FREE(b->di);
    NCF_FREE(b->raw_u);
    NCF_FREE(b->raw_i);
    NCF_FREE(b->start);
    NCF_FREE(b->kept);
    NCF_FREE(b->rec);
    NCF_FREE(b->gs);
    NCF_FREE(b->test);
    NCF_FREE(b->recent);
    NCF_FREE(b->nv);
    NCF_FREE(b->nt);
}

/* Why the filters left no user. */
static int ncf__no_user_left(int64_t n, const ncf__build_opts *bo, const ncf_load_report *rep)
{
    if (rep->below_min_rating == n)
        return ncf__fail(NCF_ERR_DATA, "no interaction is a positive (rated at least min_rating, of an event listed)");
    if (rep->users_every_item)
        return ncf__fail(NCF_ERR_DATA,
                         "no user is left who did not rate every item left (%d dropped so): nothing to "
                         "rank or draw as a negative",
                         rep->users_every_item);
    if (rep->users_filtered_out || rep->items_few_item_ratings)
        return ncf__fail(NCF_ERR_DATA, "no user is left by the filters (min_ratings %d, min_item_ratings %d%s)",
                         bo->min_ratings, bo->min_item_ratings, bo->kcore ? ", kcore" : "");
    return ncf__fail(NCF_ERR_DATA, "no user has at least %d ratings", bo->min_ratings);
}

/* Stage 1: each line's user and item as indices (b->du, b->di), ids in ascending raw order,
   the filters applied: a dropped line's are -1. */
static int ncf__build_filter(ncf__building *b, int64_t n, int U0, int I0, const ncf__build_opts *bo,
                             ncf_load_report *rep);

static int ncf__build_ids(ncf__building *b, const int64_t *users, const int64_t *items, int64_t n,
                          const ncf__build_opts *bo, ncf_load_report *rep)
{
    int64_t j;
    int U0, I0, rc = NCF_OK;
    b->du = NCF__NEW(int32_t, n), b->di = NCF__NEW(int32_t, n);
    if (!b->du || !b->di) return ncf__fail(NCF_ERR_NOMEM, "out of memory for %lld ratings", (long long)n);
    for (j = 0; j < n; j++)
        if (users[j] < 0 || items[j] < 0 || users[j] >= NCF__MAX_RAW_ID || items[j] >= NCF__MAX_RAW_ID)
            return ncf__fail(NCF_ERR_DATA, "triple %lld (from 0): id outside [0, 2^62) (user %lld, item %lld)",
                             (long long)j, (long long)users[j], (long long)items[j]);
    if (bo->fixed_users > 0) {
        for (j = 0; j < n; j++) {
            if (users[j] >= bo->fixed_users || items[j] >= bo->fixed_items)
                return ncf__fail(NCF_ERR_DATA, "triple %lld (from 0): id out of range", (long long)j);
            b->du[j] = (int32_t)users[j], b->di[j] = (int32_t)items[j];
        }
        b->U = bo->fixed_users, b->I = bo->fixed_items;
        rep->users_read = b->U, rep->items_read = b->I, rep->interactions = n;
        return NCF_OK;
    }
    if ((rc = ncf__indices_of_ids(users, n, b->du, &b->raw_u, &U0)) != NCF_OK) return rc;
    if ((rc = ncf__indices_of_ids(items, n, b->di, &b->raw_i, &I0)) != NCF_OK) return rc;
    return ncf__build_filter(b, n, U0, I0, bo, rep);
}

/* Stage 1's filters on the lines' indices b->du, b->di into the U0 users and I0 items read
   (b->raw_u, b->raw_i their ids): the users and items kept renumbered in the same order, a
   dropped line's indices -1. */
static int ncf__build_filter(ncf__building *b, int64_t n, int U0, int I0, const ncf__build_opts *bo,
                             ncf_load_report *rep)
{
    int32_t *map_u = NULL, *map_i = NULL;
    int64_t *cnt = NULL, j;
    uint8_t *keep_u = NULL, *keep_i = NULL, *any_i = NULL;
    const uint8_t *pos = bo->positive;
    int rc = NCF_OK;
    cnt = NCF__ZNEW(int64_t, U0), keep_u = NCF__ZNEW(uint8_t, U0), map_u = NCF__NEW(int32_t, U0);
    keep_i = NCF__ZNEW(uint8_t, I0), any_i = NCF__ZNEW(uint8_t, I0), map_i = NCF__NEW(int32_t, I0);
    if (!cnt || !keep_u || !map_u || !keep_i || !any_i || !map_i) rc = ncf__fail(NCF_ERR_NOMEM, "out of memory");
    if ((rc = ncf__build_agree(bo, rc)) == NCF_OK)
        rc = ncf__filter_ids(b->du, b->di, pos, n, U0, I0, bo, cnt, keep_u, keep_i, any_i, rep);
    if (rc == NCF_OK) {
        b->U = ncf__keep_ids(keep_u, U0, map_u, b->raw_u);
        b->I = ncf__keep_ids(keep_i, I0, map_i, b->raw_i);
        if (b->U == 0) rc = ncf__no_user_left(rep->interactions, bo, rep);
    }
    for (j = 0; rc == NCF_OK && j < n; j++) {
        int ok = (!pos || pos[j]) && keep_u[b->du[j]] && keep_i[b->di[j]];
        b->du[j] = ok ? map_u[b->du[j]] : -1, b->di[j] = ok ? map_i[b->di[j]] : -1;
    }
    NCF_FREE(cnt);
    NCF_FREE(keep_u);
    NCF_FREE(keep_i);
    NCF_FREE(any_i);
    NCF_FREE(map_u);
    NCF_FREE(map_i);
    return rc;
}

/* Stage 2: the positives grouped by user in file order (a counting sort), with their
   strengths. */
static int ncf__build_group(ncf__building *b, const int64_t *times, int64_t n, const ncf__build_opts *bo)
{
    const uint8_t *pos = bo->positive;
    int64_t *fill, j;
    int u, U = b->U;
    b->start = NCF__ZNEW(int64_t, (size_t)U + 1), fill = NCF__NEW(int64_t, (size_t)U + 1);
    b->kept = NCF__ZNEW(int64_t, (size_t)U + 1), b->test = NCF__NEW(int32_t, U);
    if (bo->holdout == NCF_HOLDOUT_LATEST) b->recent = NCF__NEW(int32_t, U);
    if (!b->start || !fill || !b->kept || !b->test || (bo->holdout == NCF_HOLDOUT_LATEST && !b->recent)) {
        NCF_FREE(fill);
        return ncf__fail(NCF_ERR_NOMEM, "out of memory");
    }
    for (j = 0; j < n; j++)
        if (b->du[j] >= 0 && (!pos || pos[j])) b->start[b->du[j] + 1]++;
    for (u = 0; u < U; u++) b->start[u + 1] += b->start[u];
    b->rec = NCF__NEW(ncf__interaction, b->start[U] ? b->start[U] : 1);
    if (bo->strength) b->gs = NCF__NEW(double, b->start[U] ? b->start[U] : 1);
    if (!b->rec || (bo->strength && !b->gs)) {
        NCF_FREE(fill);
        return ncf__fail(NCF_ERR_NOMEM, "out of memory for %lld ratings", (long long)n);
    }
    memcpy(fill, b->start, sizeof(int64_t) * ((size_t)U + 1));
    for (j = 0; j < n; j++) {
        int32_t du = b->du[j];
        if (du < 0 || (pos && !pos[j])) continue;
        if (b->gs) b->gs[fill[du]] = bo->strength[j];
        b->rec[fill[du]].item = b->di[j];
        b->rec[fill[du]].seq = (uint32_t)(fill[du] - b->start[du]);
        b->rec[fill[du]].time = times ? times[j] : j;
        fill[du]++;
    }
    NCF_FREE(fill);
    return NCF_OK;
}

/* Stage 3, per user: duplicate items merged (the latest kept, the strengths summed), one held
   out; the latest of the rest is what a validation set takes. */
static void ncf__build_hold_out(ncf__building *b, const ncf__build_opts *bo, ncf_load_report *rep)
{
    int64_t dups = 0;
    int u, many = NCF__MANY(bo->holdout);
    NCF__OMP(parallel for schedule(dynamic, 256) reduction(+:dups) num_threads(ncf__team(1)))
    for (u = 0; u < b->U; u++) {
        ncf__interaction *r = b->rec + b->start[u];
        int64_t c = b->start[u + 1] - b->start[u], k = 0, i, held;
        b->test[u] = -1;
        if (b->recent) b->recent[u] = -1;
        if (c == 0) continue;
        ncf__sort(r, (size_t)c, sizeof *r, ncf__cmp_interaction);
        for (i = 0; i < c; i++) {
            if (k > 0 && r[k - 1].item == r[i].item) { /* later duplicate wins */
                if (b->gs) b->gs[b->start[u] + r[i].seq] += b->gs[b->start[u] + r[k - 1].seq];
                r[k - 1] = r[i];
            } else r[k++] = r[i];
        }
        dups += c - k;
        held = ncf__pick_held(r, k, many ? NCF_HOLDOUT_NONE : bo->holdout, bo->seed, u);
        if (held >= 0) {
            b->test[u] = r[held].item;
            memmove(r + held, r + held + 1, sizeof *r * (size_t)(k - held - 1));
            k--;
        }
        b->kept[u] = k;
        if (b->recent) {
            int64_t q = -1;
            for (i = 0; i < k; i++)
                if (q < 0 || ncf__later(&r[i], &r[q])) q = i;
            b->recent[u] = q < 0 ? -1 : r[q].item;
        }
    }
    rep->duplicates = dups;
    rep->holdout = bo->holdout == NCF__HOLDOUT_SPLIT ? NCF_HOLDOUT_PAPER : bo->holdout;
}

/* Stage 4: the dataset from the records kept (freed by the caller on failure). */
static int ncf__build_fill(ncf_dataset *ds, ncf__building *b, const ncf__build_opts *bo, ncf_load_report *rep)
{
    int64_t total = 0;
    int u, U = b->U, rc;
    ds->num_users = U;
    ds->num_items = b->I;
    for (u = 0; u < U; u++) total += b->kept[u];
    ds->num_train = total;
    if ((rc = ncf__dataset_alloc(ds)) != NCF_OK) return rc;
    for (u = 0; u < U; u++) ds->user_ptr[u + 1] = ds->user_ptr[u] + b->kept[u];
    NCF__OMP(parallel for schedule(static) num_threads(ncf__team(1)))
    for (u = 0; u < U; u++) {
        int64_t i;
        for (i = 0; i < b->kept[u]; i++) ds->items[ds->user_ptr[u] + i] = b->rec[b->start[u] + i].item;
    }
    memcpy(ds->test_item, b->test, sizeof(int32_t) * (size_t)U);
    ds->recent_item = b->recent, b->recent = NULL;
    for (u = 0; u < U; u++) ds->raw_user[u] = b->raw_u ? b->raw_u[u] : u;
    for (u = 0; u < b->I; u++) ds->raw_item[u] = b->raw_i ? b->raw_i[u] : u;
    ncf__fill_train_user(ds);
    if ((rc = ncf__fill_weights(ds, b->rec, b->start, b->gs, bo, rep)) != NCF_OK) return rc;
    if (NCF__MANY(bo->holdout) && (rc = ncf__fill_many(ds, b->rec, b->start, b->nv, b->nt, b->gs, bo)) != NCF_OK)
        return rc;
    if (bo->report) {
        memcpy(rep->sep, bo->report->sep, sizeof rep->sep), rep->header = bo->report->header;
        memcpy(rep->columns, bo->report->columns, sizeof rep->columns);
        memcpy(rep->text_ids, bo->report->text_ids, sizeof rep->text_ids);
        memcpy(rep->blank_edged_ids, bo->report->blank_edged_ids, sizeof rep->blank_edged_ids);
        rep->nonpositive_ratings = bo->report->nonpositive_ratings, rep->event_kinds = bo->report->event_kinds;
        memcpy(rep->events, bo->report->events, sizeof rep->events);
        rep->other_event_lines = bo->report->other_event_lines, rep->events_dropped = bo->report->events_dropped;
        rep->below_min_rating -= rep->events_dropped; /* (those two filters counted apart) */
    }
    ds->report = *rep;
    return NCF_OK;
}

/* Stages 2 to 4 after stage 1: the dataset (empty on failure). */
static int ncf__build_rest(ncf_dataset *ds, ncf__building *b, const int64_t *times, int64_t n,
                           const ncf__build_opts *bo, ncf_load_report *rep)
{
    int rc;
    if ((rc = ncf__build_group(b, times, n, bo)) != NCF_OK) return rc;
    ncf__build_hold_out(b, bo, rep);
    if (NCF__MANY(bo->holdout)) {
        b->nv = NCF__ZNEW(int64_t, (size_t)b->U + 1), b->nt = NCF__ZNEW(int64_t, (size_t)b->U + 1);
        rc = !b->nv || !b->nt
            ? ncf__fail(NCF_ERR_NOMEM, "out of memory")
            : ncf__hold_out_many(b->rec, b->start, b->kept, b->nv, b->nt, b->U, b->I, times != NULL, bo, rep);
    }
    if (rc == NCF_OK && (rc = ncf__build_fill(ds, b, bo, rep)) != NCF_OK) ncf_dataset_free(ds);
    return rc;
}

/* The whole preprocessing after parsing, in the four stages above: ids remapped in ascending
   raw order (as TF's NCF does), positives only, users under min_ratings dropped, duplicates
   merged (the later line wins; their strengths add), one item per user held out. */
static int ncf__build(ncf_dataset *ds, const int64_t *users, const int64_t *items, const int64_t *times, int64_t n,
                      const ncf__build_opts *bo)
{
    ncf__building b;
    ncf_load_report rep;
    int rc;
    memset(ds, 0, sizeof *ds);
    memset(&b, 0, sizeof b);
    memset(&rep, 0, sizeof rep);
    if (n <= 0) return ncf__fail(NCF_ERR_DATA, "no ratings");
    if ((rc = ncf__build_ids(&b, users, items, n, bo, &rep)) == NCF_OK)
        rc = ncf__build_rest(ds, &b, times, n, bo, &rep);
    ncf__building_free(&b);
    return rc;
}

NCFDEF int ncf_dataset_from_triples(ncf_dataset *ds, const int64_t *users, const int64_t *items,
                                    const int64_t *timestamps, int64_t n, int min_ratings)
{
    ncf__build_opts bo;
    if (!ds || !users || !items || n < 0 || min_ratings < 0)
        return ncf__fail(NCF_ERR_ARG, "ncf_dataset_from_triples: NULL array, negative count or negative min_ratings");
    memset(&bo, 0, sizeof bo);
    bo.min_ratings = min_ratings, bo.holdout = NCF_HOLDOUT_LATEST;
    return ncf__build(ds, users, items, timestamps, n, &bo);
}

/* ncf_synthetic's users: 2 interactions each, the rest handed out by Pareto(1.5) weights and
   capped at cap (what the cap turns away is spread again); each user's taste cluster. */
static void ncf__synth_users(ncf__rng *rng, int U, int64_t interactions, int rank, int cap, double *w, int32_t *ucl,
                             int64_t *cnt)
{
    int64_t rest = interactions - 2 * (int64_t)U;
    int u;
    for (u = 0; u < U; u++) {
        w[u] = pow(1.0 - ncf__uniform(ncf__next(rng)), -1.0 / 1.5);
        ucl[u] = (int32_t)ncf__below(ncf__next(rng), (uint32_t)rank);
        cnt[u] = 2;
    }
    while (rest > 0) {
        double live = 0;
        int64_t given = 0;
        for (u = 0; u < U; u++)
            if (cnt[u] < cap) live += w[u];
        for (u = 0; u < U && given < rest; u++) {
            int64_t add;
            if (cnt[u] >= cap) continue;
            add = (int64_t)((double)rest * w[u] / live);
            if (add < 1) add = ncf__uniform(ncf__next(rng)) < (double)rest * w[u] / live;
            if (add > cap - cnt[u]) add = cap - cnt[u];
            if (add > rest - given) add = rest - given;
            cnt[u] += add;
            given += add;
        }
        rest -= given;
    }
}

/* Its items: popularity ~ 1/(r+10)^0.8 over a random order r, a cluster each; order[] lists
   the items cluster by cluster (cluster c from cstart[c]); cdf and ccdf are the running
   popularity in item order and in that order. */
static int ncf__synth_items(ncf__rng *rng, int I, int rank, int32_t *perm, double *pop, int32_t *icl, int32_t *cstart,
                            int32_t *order, double *cdf, double *ccdf)
{
    int32_t *f = NCF__NEW(int32_t, rank);
    int i, c;
    if (!f) return ncf__fail(NCF_ERR_NOMEM, "ncf_synthetic: out of memory");
    for (i = 0; i < I; i++) perm[i] = i;
    for (i = I - 1; i > 0; i--) {
        int k = (int)ncf__below(ncf__next(rng), (uint32_t)(i + 1)), t = perm[i];
        perm[i] = perm[k], perm[k] = t;
    }
    for (i = 0; i < I; i++) {
        pop[i] = pow(perm[i] + 10.0, -0.8);
        icl[i] = (int32_t)ncf__below(ncf__next(rng), (uint32_t)rank);
        cstart[icl[i] + 1]++;
    }
    for (c = 0; c < rank; c++) cstart[c + 1] += cstart[c];
    memcpy(f, cstart, sizeof(int32_t) * (size_t)rank);
    for (i = 0; i < I; i++) order[f[icl[i]]++] = i;
    NCF_FREE(f);
    for (i = 0; i < I; i++) {
        cdf[i] = pop[i] + (i ? cdf[i - 1] : 0);
        ccdf[i] = pop[order[i]] + (i ? ccdf[i - 1] : 0); /* running over clusters in order */
    }
    return NCF_OK;
}

/* The first index in [a, b] whose running sum reaches t (b when none does). */
static int64_t ncf__cdf_find(const double *cdf, int64_t a, int64_t b, double t)
{
    while (a < b) {
        int64_t m = (a + b) / 2;
        if (cdf[m] < t) a = m + 1;
        else b = m;
    }
    return a;
}

/* User u's distinct items, ascending, into it[]: 7 in 10 draws from its own cluster, the rest
   by popularity, until it has want of them (or 64 want draws ran). Returns how many. */
static int64_t ncf__synth_user_items(uint64_t seed, int u, int64_t want, int cl, int num_items, const int32_t *cstart,
                                     const int32_t *order, const double *cdf, const double *ccdf, int32_t *it)
{
    int64_t have = 0, draw = 0, k;
    double lo = cstart[cl] ? ccdf[cstart[cl] - 1] : 0.0, hi = ccdf[cstart[cl + 1] - 1];
    int own_ok = cstart[cl + 1] > cstart[cl];
    while (have < want && draw < 64 * want) {
        int64_t q = 0;
        while (have < want) {
            uint64_t x = ncf__hash3(seed ^ NCF__TAG_SYNTH, (uint64_t)u, (uint64_t)draw++);
            double r = ncf__uniform(ncf__mix64(x));
            if (own_ok && ncf__below(x, 10) < 7) /* own cluster */
                it[have++] = order[ncf__cdf_find(ccdf, cstart[cl], cstart[cl + 1] - 1, lo + r * (hi - lo))];
            else it[have++] = (int32_t)ncf__cdf_find(cdf, 0, num_items - 1, r * cdf[num_items - 1]);
        }
        ncf__sort(it, (size_t)have, sizeof *it, ncf__cmp_i32); /* sort and dedupe */
        for (k = 0; k < have; k++)
            if (q == 0 || it[q - 1] != it[k]) it[q++] = it[k];
        have = q;
    }
    return have;
}

/* The dataset of each user's items buf + off[u] (got[u] of them): one at random is its test
   item, the rest train. */
static int ncf__synth_split(ncf_dataset *ds, uint64_t seed, int num_users, int num_items, const int32_t *buf,
                            const int64_t *off, const int64_t *got)
{
    int64_t total = 0;
    int u, i, rc;
    for (u = 0; u < num_users; u++) total += got[u] - 1;
    ds->num_users = num_users;
    ds->num_items = num_items;
    ds->num_train = total;
    if ((rc = ncf__dataset_alloc(ds)) != NCF_OK) return rc;
    for (u = 0; u < num_users; u++) ds->user_ptr[u + 1] = ds->user_ptr[u] + got[u] - 1;
    NCF__OMP(parallel for schedule(static) num_threads(ncf__team(1)))
    for (u = 0; u < num_users; u++) {
        const int32_t *it = buf + off[u];
        int64_t t = ncf__below(ncf__hash3(seed ^ NCF__TAG_SYNTH, ~(uint64_t)u, 0), (uint32_t)got[u]), k, q = 0;
        ds->test_item[u] = it[t];
        for (k = 0; k < got[u]; k++)
            if (k != t) ds->items[ds->user_ptr[u] + q++] = it[k];
        ds->raw_user[u] = u;
    }
    for (i = 0; i < num_items; i++) ds->raw_item[i] = i;
    ncf__fill_train_user(ds);
    return NCF_OK;
}

NCFDEF int ncf_synthetic(ncf_dataset *ds, int num_users, int num_items, int64_t interactions, int rank, uint64_t seed)
{
    double *w = NULL, *pop = NULL, *cdf = NULL, *ccdf = NULL;
    int32_t *ucl = NULL, *icl = NULL, *order = NULL, *cstart = NULL, *perm = NULL, *buf = NULL;
    int64_t *cnt = NULL, *off = NULL, *got = NULL;
    int u, rc = NCF_OK, cap = num_items / 2;
    ncf__rng rng;

    if (!ds) return ncf__fail(NCF_ERR_ARG, "ncf_synthetic: NULL dataset");
    memset(ds, 0, sizeof *ds);
    if (num_users <= 0 || num_items < 8 || rank <= 0 || rank > num_items || interactions < 2 * (int64_t)num_users ||
        interactions > (int64_t)num_users * cap)
        return ncf__fail(NCF_ERR_ARG,
                         "ncf_synthetic: need users > 0, items >= 8, 0 < rank <= items and "
                         "2*users <= interactions <= users*items/2 (got %d, %d, %d, %lld)",
                         num_users, num_items, rank, (long long)interactions);
    rng.state = ncf__hash3(seed, NCF__TAG_SYNTH, 0);
    w = NCF__NEW(double, num_users);
    pop = NCF__NEW(double, num_items);
    cdf = NCF__NEW(double, num_items);
    ccdf = NCF__NEW(double, num_items);
    ucl = NCF__NEW(int32_t, num_users);
    icl = NCF__NEW(int32_t, num_items);
    order = NCF__NEW(int32_t, num_items);
    cstart = NCF__ZNEW(int32_t, rank + 1);
    perm = NCF__NEW(int32_t, num_items);
    cnt = NCF__NEW(int64_t, num_users);
    off = NCF__NEW(int64_t, (size_t)num_users + 1);
    got = NCF__NEW(int64_t, num_users);
    if (!w || !pop || !cdf || !ccdf || !ucl || !icl || !order || !cstart || !perm || !cnt || !off || !got) {
        rc = ncf__fail(NCF_ERR_NOMEM, "ncf_synthetic: out of memory");
        goto done;
    }
    ncf__synth_users(&rng, num_users, interactions, rank, cap, w, ucl, cnt);
    if ((rc = ncf__synth_items(&rng, num_items, rank, perm, pop, icl, cstart, order, cdf, ccdf)) != NCF_OK) goto done;
    off[0] = 0;
    for (u = 0; u < num_users; u++) off[u + 1] = off[u] + cnt[u];
    buf = NCF__NEW(int32_t, off[num_users]);
    if (!buf) {
        rc = ncf__fail(NCF_ERR_NOMEM, "ncf_synthetic: out of memory");
        goto done;
    }
    NCF__OMP(parallel for schedule(dynamic, 64) num_threads(ncf__team(1)))
    for (u = 0; u < num_users; u++)
        got[u] = ncf__synth_user_items(seed, u, cnt[u], ucl[u], num_items, cstart, order, cdf, ccdf, buf + off[u]);
    for (u = 0; u < num_users; u++) /* (every user draws two at least: ncf__synth_split holds one out) */
        if (got[u] < 1) {
            rc = ncf__fail(NCF_ERR_DATA, "ncf_synthetic: user %d drew no item", u);
            goto done;
        }
    rc = ncf__synth_split(ds, seed, num_users, num_items, buf, off, got);
done:
    NCF_FREE(w);
    NCF_FREE(pop);
    NCF_FREE(cdf);
    NCF_FREE(ccdf);
    NCF_FREE(ucl);
    NCF_FREE(icl);
    NCF_FREE(order);
    NCF_FREE(cstart);
    NCF_FREE(perm);
    NCF_FREE(cnt);
    NCF_FREE(off);
    NCF_FREE(got);
    NCF_FREE(buf);
    return rc;
}

#endif /* NCF_INFERENCE_ONLY */

/* ---- >>sampler (src/sampler.c) --------------------------------------------------------------- */
#ifndef NCF_INFERENCE_ONLY /* the whole stage: a device only serves */
/* Negatives by rank, the epoch as a keyed permutation. */

NCFDEF int ncf_sampler_init(ncf_sampler *s, const ncf_dataset *data, int num_neg, uint64_t seed)
{
    int u, h = 1;
    if (!s || !data || !data->user_ptr || num_neg < 0 || num_neg > 1000000)
        return ncf__fail(NCF_ERR_ARG, "ncf_sampler_init: need a sampler, a loaded dataset and 0 <= num_neg <= 1000000");
    if (ncf__all_train(data) > ((int64_t)1 << 62) / ((int64_t)num_neg + 1))
        return ncf__fail(NCF_ERR_ARG, "ncf_sampler_init: %lld positives x %d examples each is past 2^62 a epoch",
                         (long long)ncf__all_train(data), num_neg + 1);
    if (ncf__all_train(data) <= 0)
        return ncf__fail(NCF_ERR_DATA, "ncf_sampler_init: the dataset has no training positives");
    if (num_neg > 0)
        for (u = 0; u < data->num_users; u++)
            if (data->user_ptr[u + 1] > data->user_ptr[u] && ncf__num_untrained(data, u) == 0)
                return ncf__fail(NCF_ERR_DATA, "user %s has trained on all %d items: no negative can be drawn",
                                 ncf__user_name(data, u, 0), data->num_items);
    memset(s, 0, sizeof *s);
    s->data = data;
    s->num_neg = num_neg;
    s->seed = seed;
    s->num_examples = ncf__all_train(data) * (1 + num_neg);
    while (h < 62 && ((int64_t)1 << h) < s->num_examples) h++;
    s->bits = h;
    return NCF_OK;
}

/* A keyed permutation of [0, n): a bijection of [0, 2^bits), 2^bits < 2n, cycle-walked
   into [0, n) (under two tries on average). The bijection is a 4-round Feistel network whose
   halves may differ by a bit: they swap widths each round, the a-bit half taking mask[0] in
   rounds 0 and 2 and the b-bit half mask[1] in rounds 1 and 3. */
typedef struct {
    uint64_t key[4], mask[2], n;
    int b;
} ncf__perm;

static ncf__perm ncf__perm_make(int bits, uint64_t key, int64_t n)
{
    ncf__perm f;
    int a = bits / 2, round;
    f.b = bits - a;
    for (round = 0; round < 4; round++) f.key[round] = key ^ ((uint64_t)round << 58);
    f.mask[0] = ((uint64_t)1 << a) - 1, f.mask[1] = ((uint64_t)1 << f.b) - 1, f.n = (uint64_t)n;
    return f;
}

/* The bijection, its rounds written out: a loop that swapped the widths took twice as long. */
static uint64_t ncf__feistel(const ncf__perm *f, uint64_t x)
{
    uint64_t l = x >> f->b, r = x & f->mask[1], t; /* (l, r) -> (r, l ^ F(r)) */
    t = (ncf__mix64(r ^ f->key[0]) & f->mask[0]) ^ l, l = r, r = t;
    t = (ncf__mix64(r ^ f->key[1]) & f->mask[1]) ^ l, l = r, r = t;
    t = (ncf__mix64(r ^ f->key[2]) & f->mask[0]) ^ l, l = r, r = t;
    t = (ncf__mix64(r ^ f->key[3]) & f->mask[1]) ^ l, l = r, r = t;
    return (l << f->b) | r;
}

#define NCF__RUN 128 /* positions shuffled at a time */

/* e[q] = the permutation of start + q, q < n <= NCF__RUN. Every first try, then the values
   still outside [0, n) all together, round by round: each round's tries are independent,
   where a walk one position at a time waited on each try before the next and on a branch no
   predictor can guess (29 ns a position against 12 on an AMD EPYC). */
static void ncf__permute_run(const ncf__perm *f, int64_t start, int n, int64_t *e)
{
    uint64_t y[NCF__RUN];
    int at[NCF__RUN], q, j, left = 0, next;
    for (q = 0; q < n; q++) e[q] = (int64_t)ncf__feistel(f, (uint64_t)(start + q));
    for (q = 0; q < n; q++) at[left] = q, y[left] = (uint64_t)e[q], left += (uint64_t)e[q] >= f->n;
    while (left) {
        for (j = 0; j < left; j++) y[j] = ncf__feistel(f, y[j]);
        for (next = 0, j = 0; j < left; j++) {
            e[at[j]] = (int64_t)y[j], at[next] = at[j], y[next] = y[j];
            next += y[j] >= f->n;
        }
        left = next;
    }
}

/* One search of ncf__nth_absent_many: in, the list p[0..d) and the rank r; out, the item. */
typedef struct {
    const int32_t *p;
    int64_t d, r, item;
} ncf__absent;

/* The search that draws example e's negative among user u's untrained items. */
static ncf__absent ncf__untrained_draw(const ncf_sampler *s, int epoch, int64_t e, int32_t u, uint64_t again)
{
    const ncf_dataset *d = s->data;
    ncf__absent a;
    a.p = d->items + d->user_ptr[u], a.d = d->user_ptr[u + 1] - d->user_ptr[u];
    a.r = ncf__below(ncf__hash3(s->seed ^ NCF__TAG_NEG ^ (again << 32), (uint64_t)epoch, (uint64_t)e),
                     (uint32_t)ncf__num_untrained(d, u));
    a.item = 0;
    return a;
}

/* Example e of an epoch, given its positive's place in the shard p = e/(1+num_neg) - train_lo
   and k = e%(1+num_neg): the positive, or for k > 0 a fresh negative of that positive's user.
   A shard gives 0, 0, 0 for another rank's user, so that the ranks' batches summed are the
   whole batch. */
static void ncf__draw(const ncf_sampler *s, int epoch, int64_t e, int64_t p, int64_t k, int32_t *user, int32_t *item,
                      float *label)
{
    const ncf_dataset *d = s->data;
    int32_t u;
    if ((uint64_t)p >= (uint64_t)d->num_train) {
        *user = *item = 0, *label = 0.0f;
        return;
    }
    u = d->train_user[p];
    *user = u;
    if (k == 0) {
        *item = d->items[p];
        *label = d->weight ? d->weight[p] : 1.0f;
    } else {
        ncf__absent a;
        uint64_t t;
        for (t = 0; t < 64; t++) { /* (drawn again, a fresh draw each time, where draw_only refuses one) */
            if (s->skip_held_out) {
                uint64_t x = ncf__hash3(s->seed ^ NCF__TAG_NEG ^ (t << 32), (uint64_t)epoch, (uint64_t)e);
                *item = ncf__nth_unrated(d, u, ncf__below(x, (uint32_t)ncf__num_unrated(d, u)));
            } else a = ncf__untrained_draw(s, epoch, e, u, t), *item = (int32_t)ncf__nth_absent(a.p, a.d, a.r);
            if (!s->draw_only || s->draw_only[*item]) break;
        }
        *label = 0.0f;
    }
}

/* ncf__nth_absent of n <= 16 searches at once: the same halving as NCF__FIRST_NOT, one probe of
   each list a round, for as many rounds as the longest list takes. A probe misses the cache
   more often than not: the misses of one round overlap, where those of a search done alone
   wait one behind the other. A search already down to one place probes it again and keeps it
   (half 0), so the rounds need no branch on each search's state, which no predictor could
   guess; an empty list probes a zero instead. */
static void ncf__nth_absent_many(ncf__absent *a, int n)
{
    static const int32_t none = 0;
    const int32_t *p[16];
    int64_t lo[16], left[16], r[16], most = 0;
    int j;
    for (j = 0; j < n; j++) {
        p[j] = a[j].d ? a[j].p : &none, lo[j] = 0, left[j] = a[j].d, r[j] = a[j].r;
        most = a[j].d > most ? a[j].d : most;
    }
    for (; most > 1; most -= most / 2)
        for (j = 0; j < n; j++) {
            int64_t half = left[j] / 2, mid = lo[j] + half;
            lo[j] = p[j][mid] - mid <= r[j] ? mid : lo[j];
            left[j] -= half;
        }
    for (j = 0; j < n; j++) a[j].item = r[j] + lo[j] + (left[j] > 0 && p[j][lo[j]] - lo[j] <= r[j]);
}

/* ncf__draw of examples e[0..n) (n <= 16), whose positives p and k are known: the negatives drawn
   from a user's untrained items search their users' lists together (ncf__nth_absent_many). */
static void ncf__draw_chunk(const ncf_sampler *s, int epoch, const int64_t *e, const int64_t *p, const int64_t *k,
                            int n, int32_t *users, int32_t *items, float *labels)
{
    const ncf_dataset *d = s->data;
    ncf__absent a[16];
    int at[16], q, j = 0;
    for (q = 0; q < n; q++) {
        int32_t u;
        if (k[q] == 0 || s->skip_held_out || s->draw_only || (uint64_t)p[q] >= (uint64_t)d->num_train) {
            ncf__draw(s, epoch, e[q], p[q], k[q], &users[q], &items[q], &labels[q]);
            continue;
        }
        users[q] = u = d->train_user[p[q]], labels[q] = 0.0f;
        a[j] = ncf__untrained_draw(s, epoch, e[q], u, 0), at[j++] = q;
    }
    ncf__nth_absent_many(a, j);
    for (q = 0; q < j; q++) items[at[q]] = (int32_t)a[q].item;
}

/* Prefetches of the positive at place p of the shard (none for another rank's): its user,
   item and weight. A macro: GCC takes a function of prefetches alone for one without
   effects and drops its calls. */
#define NCF__PREFETCH_POSITIVE(d, p) \
    do { \
        if ((uint64_t)(p) < (uint64_t)(d)->num_train) { \
            NCF__PREFETCH((d)->train_user + (p)); \
            NCF__PREFETCH((d)->items + (p)); \
            if ((d)->weight) NCF__PREFETCH((d)->weight + (p)); \
        } \
    } while (0)

/* Examples e[0..n) (n <= 16): prefetches of what each will touch (positive, user, the
   user's item list) first, so the cache misses of 16 random examples overlap instead of
   queueing; and of the positives of e[n..n+ahead), the next chunk's, whose misses then
   overlap this one's work. With own (a shard), own[q] says whether example q is this
   shard's. */
static void ncf__fill_chunk(const ncf_sampler *s, int epoch, const int64_t *e, int n, int ahead, int32_t *users,
                            int32_t *items, float *labels, uint8_t *own)
{
    const ncf_dataset *d = s->data;
    int64_t p[16], k[16], per = 1 + s->num_neg;
    int q;
    for (q = 0; q < n; q++) {
        p[q] = e[q] / per, k[q] = e[q] - p[q] * per, p[q] -= d->shard.train_lo;
        if (own) own[q] = (uint64_t)p[q] < (uint64_t)d->num_train;
        NCF__PREFETCH_POSITIVE(d, p[q]);
    }
    for (q = n; q < n + ahead; q++) { /* the next chunk's positives */
        int64_t x = e[q] / per - d->shard.train_lo;
        NCF__PREFETCH_POSITIVE(d, x);
    }
    for (q = 0; q < n; q++) {
        int64_t lo, hi;
        int32_t u;
        if ((uint64_t)p[q] >= (uint64_t)d->num_train) continue;
        u = d->train_user[p[q]];
        lo = d->user_ptr[u], hi = d->user_ptr[u + 1];
        NCF__PREFETCH(d->items + lo + (hi - lo) / 2); /* the binary search's first probes */
        NCF__PREFETCH(d->items + lo + (hi - lo) / 4);
        NCF__PREFETCH(d->items + lo + 3 * (hi - lo) / 4);
    }
    ncf__draw_chunk(s, epoch, e, p, k, n, users, items, labels);
}

/* Examples [start, start + n) of the epoch shuffled by positive: the positives in a keyed
   order, each followed by its negatives (the examples of the epoch shuffled one by one, in
   another order). A batch then holds a fifth as many users (num_neg 4): a user's item list
   and rows, fetched for its positive, serve its negatives from the cache, and its rows take
   one Adam step for all of them. The paper config trains 1.2x as fast (docs/performance.md
   gives its quality over seeds); SGD one example a step always takes this order. The
   positives are placed NCF__RUN at a time and drawn in groups of 16: prefetches of what each
   will touch (its user, the user's item list), and of the next group's positives, so that the
   misses of 16 random positives overlap instead of queueing; their negatives' searches then
   run 16 at a time (ncf__draw_chunk). With own (a shard), own[j] says whether example j is
   this shard's. */
static void ncf__fill_by_positive(const ncf_sampler *s, int epoch, int64_t start, int n, int32_t *users, int32_t *items,
                                  float *labels, uint8_t *own)
{
    const ncf_dataset *d = s->data;
    uint64_t key = ncf__hash3(s->seed ^ NCF__TAG_SHUFFLE, (uint64_t)epoch, 1);
    int64_t per = 1 + s->num_neg, num_train = s->num_examples / per, a = start / per, end = start + n, q = start;
    int64_t x[NCF__RUN], p[NCF__RUN], ce[16], cp[16], ck[16];
    int bits = 1, g, g0, count = 0, run = 0, c;
    ncf__perm f;
    while (bits < 62 && ((int64_t)1 << bits) < num_train) bits++;
    f = ncf__perm_make(bits, key, num_train);
    while (q < end) {
        if (run == count) { /* the next run of positives, and where the first group's lie */
            int64_t left = NCF__CEIL_DIV(end - a * per, per);
            count = left < NCF__RUN ? (int)left : NCF__RUN, run = 0;
            ncf__permute_run(&f, a, count, x);
            for (g = 0; g < count; g++) {
                p[g] = x[g] - d->shard.train_lo;
                if (g < 16) NCF__PREFETCH_POSITIVE(d, p[g]);
            }
        }
        g0 = run, run = count - g0 < 16 ? count : g0 + 16; /* the group: positives [g0, run) of the run */
        for (g = run; g < count && g < run + 16; g++) NCF__PREFETCH_POSITIVE(d, p[g]); /* the next group's */
        for (g = g0; g < run; g++)
            if ((uint64_t)p[g] < (uint64_t)d->num_train) NCF__PREFETCH(d->user_ptr + d->train_user[p[g]]);
        for (g = g0; g < run && per > 1; g++)
            if ((uint64_t)p[g] < (uint64_t)d->num_train) {
                int32_t u = d->train_user[p[g]];
                int64_t lo = d->user_ptr[u], hi = d->user_ptr[u + 1];
                NCF__PREFETCH(d->items + lo + (hi - lo) / 2); /* the binary search's first probes */
                NCF__PREFETCH(d->items + lo + (hi - lo) / 4);
                NCF__PREFETCH(d->items + lo + 3 * (hi - lo) / 4);
            }
        for (c = 0, g = g0; g < run; g++, a++)
            for (; q < end && q < (a + 1) * per; q++) {
                ce[c] = x[g] * per + q - a * per, cp[c] = p[g], ck[c] = q - a * per;
                if (own) own[q - start] = (uint64_t)p[g] < (uint64_t)d->num_train;
                if (++c == 16 || q + 1 == end || (g + 1 == run && q + 1 == (a + 1) * per)) {
                    int64_t j = q + 1 - c - start;
                    ncf__draw_chunk(s, epoch, ce, cp, ck, c, users + j, items + j, labels + j);
                    c = 0;
                }
            }
    }
}

/* Examples [start, start + n) of the epoch in the sampler's order: each example shuffled on
   its own, in runs of NCF__RUN positions, each drawn 16 at a time (or by positive). With own
   (a shard), own[j] says whether example j is this shard's. */
static void ncf__fill_rows(const ncf_sampler *s, int epoch, int64_t start, int n, int32_t *users, int32_t *items,
                           float *labels, uint8_t *own)
{
    ncf__perm f;
    int64_t e[NCF__RUN];
    int j, c;
    if (s->by_positive) {
        ncf__fill_by_positive(s, epoch, start, n, users, items, labels, own);
        return;
    }
    f = ncf__perm_make(s->bits, ncf__hash3(s->seed ^ NCF__TAG_SHUFFLE, (uint64_t)epoch, 0), s->num_examples);
    for (j = 0; j < n; j += NCF__RUN) {
        int len = n - j < NCF__RUN ? n - j : NCF__RUN;
        ncf__permute_run(&f, start + j, len, e);
        for (c = 0; c < len; c += 16) {
            int here = len - c < 16 ? len - c : 16, next = len - c - here < 16 ? len - c - here : 16;
            ncf__fill_chunk(s, epoch, e + c, here, next, users + j + c, items + j + c, labels + j + c,
                            own ? own + j + c : NULL);
        }
    }
}

NCFDEF void ncf_sampler_fill(const ncf_sampler *s, int epoch, int64_t start, int n, int32_t *users, int32_t *items,
                             float *labels)
{
    int c, runs = (n + NCF__RUN - 1) / NCF__RUN;
    NCF__OMP(parallel for schedule(static) num_threads(ncf__team(n >= 2 * NCF__RUN)))
    for (c = 0; c < runs; c++) {
        int j = c * NCF__RUN;
        ncf__fill_rows(s, epoch, start + j, n - j < NCF__RUN ? n - j : NCF__RUN, users + j, items + j, labels + j,
                       NULL);
    }
}

static uint64_t ncf__hash_pairs(uint64_t h, const int32_t *a, const int32_t *b, int n)
{
    int j;
    for (j = 0; j < n; j++) h = ncf__mix64(h ^ ((uint64_t)(uint32_t)a[j] << 32 | (uint32_t)b[j]));
    return h;
}

static NCF__MAYBE_UNUSED int ncf__sampler_hash(const ncf_sampler *s, int epoch, int batch_size, uint64_t *first_batch,
                                               uint64_t *all_batches)
{
    int64_t nb, b;
    uint64_t all = 0, *hb;
    int short_of_memory = 0;
    if (!first_batch || !all_batches) return ncf__fail(NCF_ERR_ARG, "ncf__sampler_hash: NULL output");
    *first_batch = *all_batches = 0;
    if (!s || !s->data || batch_size <= 0 || ncf__is_shard(s->data))
        return ncf__fail(NCF_ERR_ARG, "ncf__sampler_hash: need a sampler of a whole dataset and batch_size > 0");
    nb = NCF__CEIL_DIV(s->num_examples, batch_size);
    if (!(hb = NCF__ZNEW(uint64_t, nb))) return ncf__fail(NCF_ERR_NOMEM, "ncf__sampler_hash: out of memory");
    NCF__OMP(parallel num_threads(ncf__team(1)))
    {
        int32_t *u = NCF__NEW(int32_t, batch_size), *it = NCF__NEW(int32_t, batch_size);
        float *y = NCF__NEW(float, batch_size);
        if (!u || !it || !y) {
            NCF__OMP(atomic write)
            short_of_memory = 1;
        }
        NCF__OMP(for schedule(static))
        for (b = 0; b < nb; b++) {
            int64_t start = b * batch_size;
            int n = (int)(s->num_examples - start < batch_size ? s->num_examples - start : batch_size);
            if (!u || !it || !y) continue;
            ncf__fill_rows(s, epoch, start, n, u, it, y, NULL);
            hb[b] = ncf__hash_pairs(0, u, it, n);
        }
        NCF_FREE(u);
        NCF_FREE(it);
        NCF_FREE(y);
    }
    for (b = 0; b < nb; b++) all = ncf__mix64(all ^ hb[b]);
    if (!short_of_memory) *first_batch = nb ? hb[0] : 0, *all_batches = all;
    NCF_FREE(hb);
    return short_of_memory ? ncf__fail(NCF_ERR_NOMEM, "ncf__sampler_hash: out of memory") : NCF_OK;
}

#endif /* NCF_INFERENCE_ONLY */

/* ---- >>kernels (src/kernels.c) --------------------------------------------------------------- */
/* The GEMM tile and its plain-C reference. */
/* Activations are batch-major [B][C]; kernels are [in][out] (as Keras). The plain-C tile is
   the reference: a vector tile (GCC/clang vector extensions) computes the same sums in the
   same order with the same rounding, so its results must equal the plain tile's bit for bit
   where both round alike (make device and the WebAssembly checks compare plain-tile builds
   with a vector-tile host build, score bits included). */

/* One rounding rule for every kernel path. Compilers fuse a*b + c into one multiply-add in
   some loops and not in others (gcc's Zen tuning splits the FMA chain of a one-row tile but
   not of the full tile), which made a logit depend on where its row fell in a batch. So where
   the target has a fused multiply-add, every multiply-add in the kernels is written as one,
   and elsewhere none can be fused: a score is the same from any tile, batch or thread. */
#if defined(__FMA__) || defined(__FP_FAST_FMAF) || defined(__ARM_FEATURE_FMA) || defined(__aarch64__) || \
    defined(__s390x__) || defined(__powerpc64__)
#define NCF__FUSED 1
#define NCF__MADD(a, b, c) fmaf(a, b, c)
#else
#define NCF__FUSED 0
#define NCF__MADD(a, b, c) ((c) + (a) * (b))
#endif

/* Register tile: MR rows x NR columns of C held in registers across the k loop.
   With GCC/clang vector extensions NR is two vectors (AVX-512: 2x16 floats, else
   2x8); elsewhere the same tile in plain C, which gives the same bits. The vector form
   is the default only where the target has SIMD registers for it (x86, NEON, WebAssembly
   with -msimd128, POWER, z): on a microcontroller (Cortex-M, RISC-V without V) the compiler would emulate
   the vectors lane by lane, in more code and more time than the plain tile
   (NCF_VECTOR_EXT forces it, NCF_NO_VECTOR_EXT turns it off). */
#if !defined(NCF_VECTOR_EXT) && \
    (defined(__x86_64__) || defined(__i386__) || defined(__ARM_NEON) || defined(__aarch64__) || \
     defined(__wasm_simd128__) || defined(__powerpc64__) || defined(__s390x__))
#define NCF_VECTOR_EXT 1
#endif
#if (defined(__GNUC__) || defined(__clang__)) && defined(NCF_VECTOR_EXT) && !defined(NCF_NO_VECTOR_EXT)
#define NCF__VEC 1
#if defined(__AVX512F__)
#define NCF__VW 16
#elif defined(__AVX__)
#define NCF__VW 8
#else
#define NCF__VW 4 /* SSE, NEON */
#endif
typedef float ncf__vf __attribute__((vector_size(NCF__VW * 4)));
typedef int32_t ncf__vi __attribute__((vector_size(NCF__VW * 4))); /* a comparison's lane masks */
/* unaligned loads and stores (memcpy compiles to one instruction); macros, since
   passing vectors wider than the target's registers changes the ABI */
#define NCF__VLOAD(v, p) memcpy(&(v), (p), sizeof(ncf__vf))
#define NCF__VSTORE(p, v) memcpy((p), &(v), sizeof(ncf__vf))
#define NCF__MR (NCF__VW == 16 ? 8 : 6) /* rows per register tile: AVX-512 has 32 vector registers */
#define NCF__NR (2 * NCF__VW)
#if NCF__VW == 16 /* an 8-wide path for layers of 8 (the paper's last) */
typedef float ncf__vh __attribute__((vector_size(32)));
typedef int32_t ncf__vhi __attribute__((vector_size(32)));
#endif
/* c += a * b on vectors, under the rule above: the ISA's fused multiply-add where we know
   its intrinsic, else fmaf lane by lane (a target with FMA but no such mapping here). */
#if NCF__FUSED && defined(__FMA__)
#include <immintrin.h>
#if NCF__VW == 16
#define NCF__VFMA(c, a, b) ((c) = (ncf__vf)_mm512_fmadd_ps((__m512)(a), (__m512)(b), (__m512)(c)))
#define NCF__HFMA(c, a, b) ((c) = (ncf__vh)_mm256_fmadd_ps((__m256)(a), (__m256)(b), (__m256)(c)))
#else
#define NCF__VFMA(c, a, b) ((c) = (ncf__vf)_mm256_fmadd_ps((__m256)(a), (__m256)(b), (__m256)(c)))
#endif
#elif NCF__FUSED && defined(__ARM_NEON) && defined(__ARM_FEATURE_FMA) && NCF__VW == 4
#include <arm_neon.h>
#define NCF__VFMA(c, a, b) ((c) = (ncf__vf)vfmaq_f32((float32x4_t)(c), (float32x4_t)(a), (float32x4_t)(b)))
#elif NCF__FUSED
#define NCF__LANE_FMA(c, a, b, W) \
    do { \
        int l_; \
        for (l_ = 0; l_ < (W); l_++) (c)[l_] = fmaf((a)[l_], (b)[l_], (c)[l_]); \
    } while (0)
#define NCF__VFMA(c, a, b) NCF__LANE_FMA(c, a, b, NCF__VW)
#define NCF__HFMA(c, a, b) NCF__LANE_FMA(c, a, b, 8)
#else
#define NCF__VFMA(c, a, b) ((c) += (a) * (b))
#define NCF__HFMA(c, a, b) ((c) += (a) * (b))
#endif
/* Lane-wise square roots, correctly rounded as sqrtf is (the optimizer's row step): the ISA's
   instruction where we know its intrinsic, else sqrtf lane by lane. */
#if defined(__AVX512F__) || defined(__AVX__) || defined(__SSE2__)
#include <immintrin.h>
#endif
#define NCF__LANE_SQRT(v, W) \
    do { \
        int q_; \
        for (q_ = 0; q_ < (W); q_++) (v)[q_] = sqrtf((v)[q_]); \
    } while (0)
#if NCF__VW == 16
#define NCF__VSQRT(v) ((v) = (ncf__vf)_mm512_sqrt_ps((__m512)(v)))
#define NCF__HSQRT(v) ((v) = (ncf__vh)_mm256_sqrt_ps((__m256)(v)))
#elif NCF__VW == 8
#define NCF__VSQRT(v) ((v) = (ncf__vf)_mm256_sqrt_ps((__m256)(v)))
#elif defined(__SSE2__)
#define NCF__VSQRT(v) ((v) = (ncf__vf)_mm_sqrt_ps((__m128)(v)))
#elif defined(__aarch64__)
#include <arm_neon.h>
#define NCF__VSQRT(v) ((v) = (ncf__vf)vsqrtq_f32((float32x4_t)(v)))
#else
#define NCF__VSQRT(v) NCF__LANE_SQRT(v, NCF__VW)
#endif
#else
#define NCF__VEC 0
#define NCF__MR 4
#define NCF__NR 16
#endif
/* Tile flags. NCF__ACC continues each sum from C; NCF__ADD sums from the bias (or 0) as
   usual and adds the total to C once at the end (the split first layer's two halves). */
enum { NCF__ACC = 1, NCF__RELU = 2, NCF__ADD = 4 };

/* Any tile up to MR x NR, in plain C: edges, and every tile without vectors. */
static void ncf__tile_scalar(float *C, int ldc, const float *A, ptrdiff_t sam, ptrdiff_t sak, const float *B, int ldb,
                             const float *bias, int mr, int nr, int K, int flags)
{
    float acc[NCF__MR][NCF__NR];
    int i, j, k;
    for (i = 0; i < mr; i++)
        for (j = 0; j < nr; j++) acc[i][j] = flags & NCF__ACC ? C[(size_t)i * ldc + j] : bias ? bias[j] : 0.0f;
    for (k = 0; k < K; k++) {
        const float *b = B + (size_t)k * ldb;
        for (i = 0; i < mr; i++) {
            float a = A[i * sam + k * sak];
            for (j = 0; j < nr; j++) acc[i][j] = NCF__MADD(a, b[j], acc[i][j]);
        }
    }
    for (i = 0; i < mr; i++)
        for (j = 0; j < nr; j++) {
            float *c = C + (size_t)i * ldc + j, v = flags & NCF__ADD ? *c + acc[i][j] : acc[i][j];
            *c = (flags & NCF__RELU) && v < 0.0f ? 0.0f : v;
        }
}

#if NCF__VEC
/* v = a vector of x. Where float math runs in double (FLT_EVAL_METHOD 1, as gcc on
   s390x) scalar-vector arithmetic does not compile, so the lanes are set one by one;
   elsewhere x - 0 is exact and compiles to a single broadcast. */
#if defined(__FLT_EVAL_METHOD__) && __FLT_EVAL_METHOD__ > 0
#define NCF__SPLAT(V, W, v, x) \
    do { \
        int s_; \
        for (s_ = 0; s_ < (W); s_++) (v)[s_] = (x); \
    } while (0)
#else
#define NCF__SPLAT(V, W, v, x) \
    do { \
        V z_ = {0}; \
        (v) = (x)-z_; \
    } while (0)
#endif

/* The tile's output stage: C + c with NCF__ADD, clamped at 0 with NCF__RELU, stored. The
   clamp is x < 0 ? 0 : x, as the scalar paths write it (NaN and -0 pass), on whole vectors:
   the lanes that compare below 0, of mask type VI, are cleared. */
#define NCF__TILE_STORE(V, VI, p, c, flags) \
    do { \
        if ((flags)&NCF__ADD) { \
            V o_; \
            memcpy(&o_, (p), sizeof o_); \
            (c) = o_ + (c); \
        } \
        if ((flags)&NCF__RELU) { \
            V z_ = {0}; \
            (c) = (V)(~((c) < z_) & (VI)(c)); \
        } \
        memcpy((p), &(c), sizeof(c)); \
    } while (0)

/* A loop with a small constant trip count, unrolled whole. */
#if defined(__clang__)
#define NCF__UNROLL _Pragma("unroll")
#else
#define NCF__UNROLL _Pragma("GCC unroll 16")
#endif

/* The full MR x NR tile: constant trip counts, unrolled so the accumulators stay in
   registers from the first load to the last store. Rows before `from` are summed and not
   stored (the last rows of a range, whose tile overlaps the one before: see ncf__gemm_block). */
static void ncf__tile_full(float *C, int ldc, const float *A, ptrdiff_t sam, ptrdiff_t sak, const float *B, int ldb,
                           const float *bias, int K, int flags, int from)
{
    ncf__vf c0[NCF__MR], c1[NCF__MR], i0 = {0}, i1 = {0};
    int i, k;
    if (bias && !(flags & NCF__ACC)) NCF__VLOAD(i0, bias), NCF__VLOAD(i1, bias + NCF__VW);
    NCF__UNROLL
    for (i = 0; i < NCF__MR; i++) {
        c0[i] = i0, c1[i] = i1;
        if (flags & NCF__ACC) NCF__VLOAD(c0[i], C + (size_t)i * ldc), NCF__VLOAD(c1[i], C + (size_t)i * ldc + NCF__VW);
    }
    for (k = 0; k < K; k++) {
        const float *b = B + (size_t)k * ldb, *a = A + k * sak;
        ncf__vf b0, b1;
        NCF__VLOAD(b0, b);
        NCF__VLOAD(b1, b + NCF__VW);
        NCF__UNROLL
        for (i = 0; i < NCF__MR; i++) {
            ncf__vf ai;
            NCF__SPLAT(ncf__vf, NCF__VW, ai, a[i * sam]);
            NCF__VFMA(c0[i], ai, b0);
            NCF__VFMA(c1[i], ai, b1);
        }
    }
    NCF__UNROLL
    for (i = 0; i < NCF__MR; i++)
        if (i >= from) {
            NCF__TILE_STORE(ncf__vf, ncf__vi, C + (size_t)i * ldc, c0[i], flags);
            NCF__TILE_STORE(ncf__vf, ncf__vi, C + (size_t)i * ldc + NCF__VW, c1[i], flags);
        }
}

/* mr x W tiles at the edges, one row at a time, for vector type V of W floats. */
#define NCF__TILE_ROWS(name, V, VI, W, FMA) \
    static void name(float *C, int ldc, const float *A, ptrdiff_t sam, ptrdiff_t sak, const float *B, int ldb, \
                     const float *bias, int mr, int K, int flags) \
    { \
        int i, k; \
        for (i = 0; i < mr; i++) { \
            V c = {0}, b, ak; \
            const float *a = A + i * sam; \
            if (flags & NCF__ACC) memcpy(&c, C + (size_t)i * ldc, sizeof c); \
            else if (bias) memcpy(&c, bias, sizeof c); \
            for (k = 0; k < K; k++) { \
                memcpy(&b, B + (size_t)k * ldb, sizeof b); \
                NCF__SPLAT(V, W, ak, a[k * sak]); \
                FMA(c, ak, b); \
            } \
            NCF__TILE_STORE(V, VI, C + (size_t)i * ldc, c, flags); \
        } \
    }
/* A column W wide and R rows high (NCF__TALL, or NCF__MR for what is left), for vector type
   V: one row at a time would be a single chain of dependent multiply-adds, bound by their
   latency (the paper's last layers, 16 and 8 wide, ran at a fifth of the full tile's rate);
   this many rows keep the FMA units busy. Each sum still runs over k in order from its bias:
   the same bits as the edge tile. */
#define NCF__TALL (2 * NCF__MR)
#define NCF__TILE_TALL(name, V, VI, W, FMA, R) \
    static void name(float *C, int ldc, const float *A, ptrdiff_t sam, ptrdiff_t sak, const float *B, int ldb, \
                     const float *bias, int K, int flags, int from) \
    { \
        V c[R], i0 = {0}; \
        int i, k; \
        if (bias && !(flags & NCF__ACC)) memcpy(&i0, bias, sizeof i0); \
        NCF__UNROLL \
        for (i = 0; i < (R); i++) { \
            c[i] = i0; \
            if (flags & NCF__ACC) memcpy(&c[i], C + (size_t)i * ldc, sizeof c[i]); \
        } \
        for (k = 0; k < K; k++) { \
            const float *a = A + k * sak; \
            V b; \
            memcpy(&b, B + (size_t)k * ldb, sizeof b); \
            NCF__UNROLL \
            for (i = 0; i < (R); i++) { \
                V ai; \
                NCF__SPLAT(V, W, ai, a[i * sam]); \
                FMA(c[i], ai, b); \
            } \
        } \
        NCF__UNROLL \
        for (i = 0; i < (R); i++) \
            if (i >= from) NCF__TILE_STORE(V, VI, C + (size_t)i * ldc, c[i], flags); \
    }
NCF__TILE_ROWS(ncf__tile_narrow, ncf__vf, ncf__vi, NCF__VW, NCF__VFMA)
NCF__TILE_TALL(ncf__tile_tall, ncf__vf, ncf__vi, NCF__VW, NCF__VFMA, NCF__TALL)
NCF__TILE_TALL(ncf__tile_column, ncf__vf, ncf__vi, NCF__VW, NCF__VFMA, NCF__MR)
#if NCF__VW == 16
NCF__TILE_ROWS(ncf__tile_half, ncf__vh, ncf__vhi, 8, NCF__HFMA) /* 8 wide, for layers of 8 (the paper's last) */
NCF__TILE_TALL(ncf__tile_half_tall, ncf__vh, ncf__vhi, 8, NCF__HFMA, NCF__TALL)
NCF__TILE_TALL(ncf__tile_half_column, ncf__vh, ncf__vhi, 8, NCF__HFMA, NCF__MR)
#endif
#endif

/* C[m][n] = init + sum_k A(m,k) * B[k][n] for rows m0 <= m < m1 (a tile-aligned range),
   where A(m,k) = A[m*sam + k*sak]; init is C itself with NCF__ACC, else bias[n]
   (or 0 when bias is NULL); NCF__ADD stores C + that sum; NCF__RELU clamps at 0.
   Every output is summed in ascending k by one thread, and every path rounds as the
   others do, so results depend neither on how rows are split across threads nor on
   where a row falls in a tile. */
static void ncf__gemm_block(float *C, int ldc, const float *A, ptrdiff_t sam, ptrdiff_t sak, const float *B, int ldb,
                            const float *bias, int m0, int m1, int N, int K, int flags);

#ifndef NCF__KC
#define NCF__KC 256
#endif
#ifdef NCF__BARE_METAL /* a microcontroller: no cache to block for, and the code it takes saved */
#define NCF__NO_CACHE 1
#else
#define NCF__NO_CACHE 0
#endif
static void ncf__gemm_rows(float *C, int ldc, const float *A, ptrdiff_t sam, ptrdiff_t sak, const float *B, int ldb,
                           const float *bias, int m0, int m1, int N, int K, int flags)
{
    /* Blocks of NCF__KC along k, so a block of B stays in L1 across the row tiles. Each sum
       goes on from where the last block stored it, in the same order: the result does not
       change. (NCF__ADD sums apart from C, so it runs unblocked.) */
    int k0;
    if (K <= NCF__KC || (flags & NCF__ADD) || NCF__NO_CACHE) {
        ncf__gemm_block(C, ldc, A, sam, sak, B, ldb, bias, m0, m1, N, K, flags);
        return;
    }
    for (k0 = 0; k0 < K; k0 += NCF__KC) {
        int kc = K - k0 < NCF__KC ? K - k0 : NCF__KC;
        int f = (k0 ? NCF__ACC : flags & NCF__ACC) | (k0 + kc == K ? flags & NCF__RELU : 0);
        ncf__gemm_block(C, ldc, A + k0 * sak, sam, sak, B + (size_t)k0 * ldb, ldb, k0 ? NULL : bias, m0, m1, N, kc, f);
    }
}

/* A range of this many row tiles or more copies each K x NR panel of B it reads into a
   contiguous block on the stack first (KC x NR floats: 16 KB with AVX2), where the panel's
   rows span more than NCF__PACK_SPAN floats. B's rows are a layer's width apart, 1 KB for
   256 floats: a panel's lines then fall in a few of L1's sets and evict each other, and
   each tile read the panel from L2 again; contiguous, it stays in L1 across the range's
   tiles. (AMD EPYC, AVX2: 36 rows of 256 x 256 x 256 on one thread at 59-61 GFLOP/s with
   the panels strided, 77-88 with them copied beforehand; the MLPerf config, copies included,
   trained 1.04-1.07x as fast, the same bits.) The paper's layers fit L1 as they are. */
#define NCF__PACK_TILES 3
#define NCF__PACK_SPAN 4096 /* floats a panel's rows span, beyond which it is copied: 16 KB */
#if NCF__VEC
/* Rows [0, K) of the NR columns at B (rows ldb apart), contiguous in panel; returns panel. */
static const float *ncf__pack_panel(float *panel, const float *B, int ldb, int K)
{
    size_t k, nr = 2 * sizeof(ncf__vf) / sizeof(float); /* NCF__NR */
    for (k = 0; k < (size_t)K; k++) memcpy(panel + k * nr, B + k * ldb, nr * sizeof(float));
    return panel;
}
#endif

/* Column panels outside, row tiles inside: a K x NR panel of B stays in cache across this
   thread's rows. Each panel width has its tile: two vectors, one, half of one (AVX-512), and
   the plain-C tile for the rest (and everywhere without vectors). The last rows of a range of
   MR or more that do not fill a tile take a whole tile ending with the range, which sums
   again the rows it shares with the tile before and stores only its own: the one-row tile
   would sum each output as a single chain of dependent multiply-adds, bound by their latency
   (a dW of 64 rows, 10 tiles and 4 rows, spent over a quarter of its time on those 4). */
static void ncf__gemm_block(float *C, int ldc, const float *A, ptrdiff_t sam, ptrdiff_t sak, const float *B, int ldb,
                            const float *bias, int m0, int m1, int N, int K, int flags)
{
    int m, n = 0;
#if NCF__VEC
    float panel[NCF__KC * NCF__NR];
    int pack = m1 - m0 >= NCF__PACK_TILES * NCF__MR && K <= NCF__KC && (size_t)K * ldb > NCF__PACK_SPAN;
    for (; n + NCF__NR <= N; n += NCF__NR) {
        const float *Bn = pack ? ncf__pack_panel(panel, B + n, ldb, K) : B + n;
        int ldn = pack ? NCF__NR : ldb;
        for (m = m0; m < m1; m += NCF__MR) {
            int mr = m1 - m < NCF__MR ? m1 - m : NCF__MR, back = m1 - m0 >= NCF__MR ? NCF__MR - mr : 0;
            const float *Am = A + (m - back) * sam, *bn = bias ? bias + n : NULL;
            float *Cm = C + (size_t)(m - back) * ldc + n;
            if (mr == NCF__MR || back) {
                ncf__tile_full(Cm, ldc, Am, sam, sak, Bn, ldn, bn, K, flags, back);
            } else {
                ncf__tile_narrow(Cm, ldc, Am, sam, sak, Bn, ldn, bn, mr, K, flags);
                ncf__tile_narrow(Cm + NCF__VW, ldc, Am, sam, sak, Bn + NCF__VW, ldn, bn ? bn + NCF__VW : NULL, mr, K,
                                 flags);
            }
        }
    }
    for (; n + NCF__VW <= N; n += NCF__VW)
        for (m = m0; m < m1;) {
            int mr = m1 - m < NCF__TALL ? (m1 - m < NCF__MR ? m1 - m : NCF__MR) : NCF__TALL;
            int back = mr < NCF__MR && m1 - m0 >= NCF__MR ? NCF__MR - mr : 0;
            const float *Am = A + (m - back) * sam, *bn = bias ? bias + n : NULL;
            float *Cm = C + (size_t)(m - back) * ldc + n;
            if (mr == NCF__TALL) ncf__tile_tall(Cm, ldc, Am, sam, sak, B + n, ldb, bn, K, flags, 0);
            else if (mr == NCF__MR || back) ncf__tile_column(Cm, ldc, Am, sam, sak, B + n, ldb, bn, K, flags, back);
            else ncf__tile_narrow(Cm, ldc, Am, sam, sak, B + n, ldb, bn, mr, K, flags);
            m += mr;
        }
#if NCF__VW == 16
    for (; n + 8 <= N; n += 8)
        for (m = m0; m < m1;) {
            int mr = m1 - m < NCF__TALL ? (m1 - m < NCF__MR ? m1 - m : NCF__MR) : NCF__TALL;
            int back = mr < NCF__MR && m1 - m0 >= NCF__MR ? NCF__MR - mr : 0;
            const float *Am = A + (m - back) * sam, *bn = bias ? bias + n : NULL;
            float *Cm = C + (size_t)(m - back) * ldc + n;
            if (mr == NCF__TALL) ncf__tile_half_tall(Cm, ldc, Am, sam, sak, B + n, ldb, bn, K, flags, 0);
            else if (mr == NCF__MR || back)
                ncf__tile_half_column(Cm, ldc, Am, sam, sak, B + n, ldb, bn, K, flags, back);
            else ncf__tile_half(Cm, ldc, Am, sam, sak, B + n, ldb, bn, mr, K, flags);
            m += mr;
        }
#endif
#endif
    for (; n < N; n += NCF__NR) {
        int nr = N - n < NCF__NR ? N - n : NCF__NR;
        for (m = m0; m < m1; m += NCF__MR) {
            int mr = m1 - m < NCF__MR ? m1 - m : NCF__MR;
            const float *Am = A + m * sam, *bn = bias ? bias + n : NULL;
            float *Cm = C + (size_t)m * ldc + n;
            ncf__tile_scalar(Cm, ldc, Am, sam, sak, B + n, ldb, bn, mr, nr, K, flags);
        }
    }
}

#define NCF__TILES(n) NCF__CEIL_DIV((int64_t)(n), NCF__MR)

/* Tiles of rows to claim at a time so a claim carries about NCF__PAR_WORK multiply-adds. */
static int64_t ncf__tile_grain(float macs_per_row)
{
    float g = NCF__PAR_WORK / (macs_per_row * NCF__MR);
    return g < 1 ? 1 : g > 1024 ? 1024 : (int64_t)g;
}

/* ncf__gemm_rows over all M rows, as a phase of row tiles. */
static void ncf__gemm_phase(ncf__ctx *x, float *C, int ldc, const float *A, ptrdiff_t sam, ptrdiff_t sak,
                            const float *B, int ldb, const float *bias, int M, int N, int K, int flags)
{
    int64_t lo, hi;
    while (ncf__claim(x, NCF__TILES(M), ncf__tile_grain((float)N * K), &lo, &hi))
        ncf__gemm_rows(C, ldc, A, sam, sak, B, ldb, bias, (int)lo * NCF__MR, hi * NCF__MR < M ? (int)hi * NCF__MR : M,
                       N, K, flags);
}

/* The same in a region of its own. */
static void ncf__gemm(float *C, int ldc, const float *A, ptrdiff_t sam, ptrdiff_t sak, const float *B, int ldb,
                      const float *bias, int M, int N, int K, int flags)
{
    ncf__team team = NCF__TEAM_INIT;
    NCF__PARALLEL((float)M * N * K > 4 * NCF__PAR_WORK && M > NCF__MR)
    {
        ncf__ctx x = ncf__join(&team);
        ncf__gemm_phase(&x, C, ldc, A, sam, sak, B, ldb, bias, M, N, K, flags);
    }
}

#ifndef NCF_INFERENCE_ONLY
/* Stable for any logit: log(1 + e^-|z|) never overflows. */
/* Cross-entropy of logit z against label y: 0 a negative, y > 0 a positive weighing y. */
static double ncf__bce(float z, float y)
{
    double zd = z;
    if (y > 0) return y * ((zd > 0 ? zd : 0) - zd + log1p(exp(-fabs(zd))));
    return (zd > 0 ? zd : 0) + log1p(exp(-fabs(zd)));
}

static float ncf__sigmoid(float z)
{
    if (z >= 0) return 1.0f / (1.0f + expf(-z));
    {
        float e = expf(z);
        return e / (1.0f + e);
    }
}
#endif

/* ---- >>model (src/model.c) ------------------------------------------------------------------- */
/* Config checks, the parameter layout, create and free. */

NCFDEF ncf_config ncf_config_default(void)
{
    ncf_config c;
    memset(&c, 0, sizeof c);
    c.model = NCF_NEUMF;
    c.mf_dim = 8;
    c.num_layers = 4;
    c.layers[0] = 64, c.layers[1] = 32, c.layers[2] = 16, c.layers[3] = 8;
    c.lr = 0.001f, c.beta1 = 0.9f, c.beta2 = 0.999f, c.epsilon = 1e-8f;
    c.adam = NCF_ADAM_LAZY;
    c.init_sd = 0.01f;
    c.batch_size = 256;
    c.num_neg = 4;
    c.seed = 1;
    c.unobserved = 0.1f;
    return c;
}

NCFDEF ncf_config ncf_config_mlperf(void)
{
    ncf_config c = ncf_config_default();
    c.mf_dim = 64;
    c.layers[0] = 256, c.layers[1] = 256, c.layers[2] = 128, c.layers[3] = 64;
    c.batch_size = 2048;
    c.lr = 0.0005f;
    return c;
}

static const char *ncf__wname[] = {"",   "w1", "w2",  "w3",  "w4",  "w5",  "w6",  "w7",
                                   "w8", "w9", "w10", "w11", "w12", "w13", "w14", "w15"};
static const char *ncf__bname[] = {"",   "b1", "b2",  "b3",  "b4",  "b5",  "b6",  "b7",
                                   "b8", "b9", "b10", "b11", "b12", "b13", "b14", "b15"};
#if NCF_MAX_LAYERS > 16
#error "NCF_MAX_LAYERS is at most 16"
#endif

/* A pair of [rows][D] embedding tables: floats, or (an int8 model read in place) int8 rows
   with a float scale each, row r being qscale[r] * q[r][..]. */
typedef struct {
    float *user, *item;
    int D;
    const int8_t *quser, *qitem;
    const float *suser, *sitem;
} ncf__table;

/* A batch's forward activations. The training scratch holds one; each serving call makes
   its own, so any number of threads can score with one model at once. */
typedef struct {
    float *x[NCF_MAX_LAYERS]; /* x[0]: gathered [user;item] MLP embeddings, x[l]: layer l output */
    float *gmf;               /* [n][F] user * item GMF rows */
    float *logit;             /* [n] */
} ncf__acts;

/* Everything about a model that is not its parameters, in named parts. */
typedef struct { /* the training batch's buffers, for cap rows */
    int cap;
    ncf__acts act;             /* its activations */
    float *dgu, *dgi;          /* [cap][F] */
    float *dz;                 /* [cap] */
    double *ex_loss;           /* [cap] per-example loss, summed in order */
    float *dy[NCF_MAX_LAYERS]; /* [cap][layers[l]]: d(loss)/d(output of layer l); [0] the gathered rows' */
    float *wt[NCF_MAX_LAYERS]; /* [layers[l]][layers[l-1]]: each kernel transposed, for the backward pass */
    uint64_t *ukey, *ikey;     /* (row << 32 | position), sorted: the batch grouped by table row */
    uint64_t *sortbuf;         /* [2][cap] radix sort scratch (users and items at once) */
    int *ustart, *istart;      /* [cap+1] start of each distinct row in ukey/ikey */
    int nuser, nitem;          /* distinct table rows in the last batch */
} ncf__batch_bufs;

typedef struct {   /* embedding rows with gradients since the last update */
    int32_t *user; /* [num_users] */
    int32_t *item; /* [num_items] */
    int nuser, nitem;
    uint8_t *flag; /* [num_users + num_items]: 1 for a row in the lists above */
} ncf__touched;

typedef struct {                          /* where the model's tensors are */
    int n;                                /* embedding table pairs in tab[] */
    ncf__table tab[3];                    /* GMF/MF, then MLP, then MF biases: those the model has */
    int gmf, mlp;                         /* tab[] of the GMF (MF) and MLP tables, -1 without */
    float *gmf_weights;                   /* GMF output weights: w_out, or ones for MF */
    float *ones;                          /* MF: [F] ones standing in for w_out */
    float *floats[NCF_MAX_TENSORS];       /* each tensor's floats, or NULL for int8 rows read in place: */
    const int8_t *int8[NCF_MAX_TENSORS];  /* their int8 rows */
    const float *scales[NCF_MAX_TENSORS]; /* and scales */
    float **named[NCF_MAX_TENSORS];       /* the model's field that names each tensor's floats */
} ncf__tables;

/* Sums that want more than a float's digits: double, but float on a device (no double math). */
#ifdef NCF_INFERENCE_ONLY
typedef float ncf__wide;
#define NCF__WIDE_SQRT sqrtf
#else
typedef double ncf__wide;
#define NCF__WIDE_SQRT sqrt
#endif

typedef struct {        /* what serving computes once */
    float *proj;        /* the item projection (the first layer's item half), valid at step */
    ncf__wide *gram[2]; /* an ALS model's Gram matrices of its users' [0] and items' [1] rows */
    int64_t step;
    int32_t *user_order, *item_order; /* indices by ascending raw id, NULL where that is 0, 1, 2... */
} ncf__serving_cache;

struct ncf__scratch {
    int F, H, nd, top; /* shape: GMF width, MLP embedding width, dense layers, MLP output */
    size_t emb_params; /* embeddings come first in the parameter block */
    ncf__tables tables;
    ncf__batch_bufs batch; /* training */
    ncf__touched touched;  /* training */
    int nonfinite;         /* set by ncf_update when it wrote a non-finite parameter */
    ncf__serving_cache cache;
    ncf__pace pace;             /* training: whether its threads pay on this machine now */
    int in_place;               /* parameters, ids and rated items are the caller's buffer */
    struct ncf__features *feat; /* side features (features.c), or NULL */
#ifdef NCF_MPI
    struct {
        int64_t bytes; /* sent by ncf_mpi_train_examples */
        int stale;     /* trained over ranks: other ranks' users' rows are out of date (or absent) */
        int users;     /* a model shard: the whole model's users (0: a whole model) */
        int user0;     /* a model shard: the user of its user tables' row 0, its first user */
        int user_end;  /* a model shard: the end of its users [user0, user_end) (its rows, or 1 row if none) */
    } mpi;
#endif
};

static void ncf__refresh_cache(ncf_model *m);                  /* metrics: the item projection, ALS Gram matrices */
static ncf__ids ncf__model_ids(const ncf_model *m, int items); /* serving: the model's ids */
static int ncf__has_ids(const ncf_model *m);

/* A model trained over MPI ranks whose copy here has only this rank's users up to date. */
#if defined(NCF_MPI) && !defined(NCF_INFERENCE_ONLY)
#define NCF__MPI_STALE(m) ((m)->scratch && (m)->scratch->mpi.stale)
#else
#define NCF__MPI_STALE(m) 0
#endif
/* The users of the whole model: a model shard's cfg.num_users counts only the rows it holds. */
#if defined(NCF_MPI) && !defined(NCF_INFERENCE_ONLY)
#define NCF__USERS(m) ((m)->scratch->mpi.users ? (m)->scratch->mpi.users : (m)->cfg.num_users)
#define NCF__USER0(s) ((s)->mpi.user0) /* the user of the user tables' row 0 (0 but in a shard) */
#else
#define NCF__USERS(m) ((m)->cfg.num_users)
#define NCF__USER0(s) 0
#endif
#define NCF__STALE_TEXT \
    "this rank's copy of the model has only its own users' rows up to date (ncf_mpi_sync; a model shard: " \
    "ncf_mpi_save, then load the file)"

static void ncf__acts_free(ncf__acts *a)
{
    int l;
    for (l = 0; l < NCF_MAX_LAYERS; l++) NCF_FREE(a->x[l]), a->x[l] = NULL;
    NCF_FREE(a->gmf), NCF_FREE(a->logit);
    a->gmf = a->logit = NULL;
}

/* Activations for n rows; 0 (all freed) when out of memory. */
static int ncf__acts_alloc(const ncf_model *m, ncf__acts *a, int n)
{
    const struct ncf__scratch *s = m->scratch;
    int l, ok = 1;
    memset(a, 0, sizeof *a);
    for (l = 0; l <= s->nd; l++) ok &= (a->x[l] = NCF__NEW(float, (size_t)n *(s->H ? m->cfg.layers[l] : 1))) != NULL;
    a->gmf = NCF__NEW(float, (size_t)n *(s->F ? s->F : 1)), a->logit = NCF__NEW(float, n);
    if (ok && a->gmf && a->logit) return 1;
    ncf__acts_free(a);
    return 0;
}

#ifndef NCF_INFERENCE_ONLY
/* The training batch's buffers (serving keeps its own, per call). */
static void ncf__free_buffers(struct ncf__scratch *s)
{
    int l;
    ncf__acts_free(&s->batch.act);
    NCF_FREE(s->batch.dgu);
    NCF_FREE(s->batch.dgi);
    NCF_FREE(s->batch.dz);
    NCF_FREE(s->batch.ex_loss);
    for (l = 0; l < NCF_MAX_LAYERS; l++)
        NCF_FREE(s->batch.dy[l]), NCF_FREE(s->batch.wt[l]), s->batch.dy[l] = s->batch.wt[l] = NULL;
    NCF_FREE(s->batch.ukey);
    NCF_FREE(s->batch.ikey);
    NCF_FREE(s->batch.sortbuf);
    NCF_FREE(s->batch.ustart);
    NCF_FREE(s->batch.istart);
    s->batch.dgu = s->batch.dgi = s->batch.dz = NULL;
    s->batch.ex_loss = NULL, s->batch.ukey = s->batch.ikey = s->batch.sortbuf = NULL,
    s->batch.ustart = s->batch.istart = NULL;
    s->batch.cap = 0;
}

/* Grows the training batch buffers to hold n rows. */
static int ncf__reserve(ncf_model *m, int n)
{
    struct ncf__scratch *s = m->scratch;
    const int *L = m->cfg.layers;
    int ok, l, F = s->F ? s->F : 1;
    if (n <= s->batch.cap) return NCF_OK;
    ncf__free_buffers(s);
    ok = ncf__acts_alloc(m, &s->batch.act, n);
    s->batch.dgu = NCF__NEW(float, (size_t)n *F), s->batch.dgi = NCF__NEW(float, (size_t)n *F);
    s->batch.dz = NCF__NEW(float, n), s->batch.ex_loss = NCF__NEW(double, n);
    for (l = 0; l <= s->nd && s->H; l++) {
        ok &= (s->batch.dy[l] = NCF__NEW(float, (size_t)n *L[l])) != NULL;
        if (l) ok &= (s->batch.wt[l] = NCF__NEW(float, (size_t)L[l - 1] * L[l])) != NULL;
    }
    s->batch.ukey = NCF__NEW(uint64_t, n), s->batch.ikey = NCF__NEW(uint64_t, n),
    s->batch.sortbuf = NCF__NEW(uint64_t, 2 * (size_t)n);
    s->batch.ustart = NCF__NEW(int, (size_t)n + 1), s->batch.istart = NCF__NEW(int, (size_t)n + 1);
    ok &= s->batch.dgu && s->batch.dgi && s->batch.dz && s->batch.ex_loss && s->batch.ukey && s->batch.ikey &&
        s->batch.sortbuf && s->batch.ustart && s->batch.istart;
    if (!ok) {
        ncf__free_buffers(s);
        return ncf__fail(NCF_ERR_NOMEM, "out of memory for a batch of %d", n);
    }
    s->batch.cap = n;
    return NCF_OK;
}
#endif

/* Whether c is a config a model can have; what names it in the message. */
static int ncf__check_config(const ncf_config *c, const char *what)
{
    int l, mlp = c->model == NCF_NEUMF || c->model == NCF_MLP;
    if (c->model != NCF_NEUMF && c->model != NCF_GMF && c->model != NCF_MLP && c->model != NCF_MF)
        return ncf__fail(NCF_ERR_ARG, "%s: unknown model type %d", what, (int)c->model);
    if (c->num_users <= 0 || c->num_items <= 0)
        return ncf__fail(NCF_ERR_ARG, "%s: num_users and num_items must be > 0 (got %d, %d)", what, c->num_users,
                         c->num_items);
    if (c->model != NCF_MLP && (c->mf_dim <= 0 || c->mf_dim > 65536))
        return ncf__fail(NCF_ERR_ARG, "%s: mf_dim must be 1..65536 (got %d)", what, c->mf_dim);
    if (mlp && (c->num_layers < 2 || c->num_layers > NCF_MAX_LAYERS))
        return ncf__fail(NCF_ERR_ARG, "%s: the MLP needs 2 to %d layer sizes (got %d)", what, NCF_MAX_LAYERS,
                         c->num_layers);
    for (l = 0; mlp && l < c->num_layers; l++) {
        if (c->layers[l] <= 0 || c->layers[l] > 65536)
            return ncf__fail(NCF_ERR_ARG, "%s: layer %d has size %d (must be 1..65536)", what, l, c->layers[l]);
        if (!(c->mlp_reg[l] >= 0 && c->mlp_reg[l] <= 1e6f))
            return ncf__fail(NCF_ERR_ARG, "%s: layer %d's L2 is not a number in [0, 1e6]", what,
                             l); /* (no %g: a device links no double math) */
    }
    if (mlp && c->layers[0] % 2)
        return ncf__fail(NCF_ERR_ARG, "%s: layers[0] = %d must be even (user and item halves)", what, c->layers[0]);
#ifndef NCF_INFERENCE_ONLY /* (a device serves: the training settings only pass through it) */
    /* (written so that NaN fails each test: a NaN or infinite setting is refused, not trained on) */
    if (!(c->lr > 0 && c->lr <= 1e3f) || !(c->beta1 >= 0 && c->beta1 < 1) || !(c->beta2 >= 0 && c->beta2 < 1) ||
        !(c->epsilon > 0 && c->epsilon <= 1) || !(c->mf_reg >= 0 && c->mf_reg <= 1e6f) ||
        !(c->init_sd >= 0 && c->init_sd < 1e3f))
        return ncf__fail(NCF_ERR_ARG,
                         "%s: need 0 < lr <= 1000, 0 <= beta1, beta2 < 1, 0 < epsilon <= 1, "
                         "0 <= mf_reg <= 1e6, 0 <= init_sd < 1000 (NaN and infinity refused)",
                         what);
    if (c->batch_size <= 0 || c->batch_size > (1 << 24) || c->num_neg < 0 || c->num_neg > 1000000)
        return ncf__fail(NCF_ERR_ARG, "%s: need 0 < batch_size <= 2^24 and 0 <= num_neg <= 1000000 (got %d, %d)", what,
                         c->batch_size, c->num_neg);
    if (c->adam != NCF_ADAM_LAZY && c->adam != NCF_ADAM_DENSE)
        return ncf__fail(NCF_ERR_ARG, "%s: unknown Adam mode %d", what, (int)c->adam);
    if (c->optimizer != NCF_OPT_ADAM && c->optimizer != NCF_OPT_SGD && c->optimizer != NCF_OPT_ALS)
        return ncf__fail(NCF_ERR_ARG, "%s: unknown optimizer %d", what, (int)c->optimizer);
    if (c->optimizer == NCF_OPT_ALS && (c->model != NCF_MF || c->mf_dim > NCF__ALS_MOST_DIM))
        return ncf__fail(NCF_ERR_ARG, "%s: ALS trains MF with mf_dim up to %d (got model %d, mf_dim %d)", what,
                         NCF__ALS_MOST_DIM, (int)c->model, c->mf_dim);
    if (c->optimizer == NCF_OPT_ALS && !(c->unobserved > 0 && c->unobserved <= 1e6f))
        return ncf__fail(NCF_ERR_ARG, "%s: ALS needs 0 < unobserved <= 1e6 (NaN refused)", what);
#endif
    return NCF_OK;
}

static void ncf__add_tensor(ncf_model *m, uint64_t *off, const char *name, int rows, int cols, float **named)
{
    ncf_tensor *t = &m->tensors[m->num_tensors];
    m->scratch->tables.named[m->num_tensors++] = named;
    t->name = name, t->offset = (size_t)*off, t->rows = rows, t->cols = cols; /* (the total is checked to fit) */
    *off += (uint64_t)rows * (uint64_t)cols;
}

/* A model without parameter memory: config checked, tensors laid out (the embedding tables,
   user side then item side, then the dense layers and the output), scratch made. The layout
   is counted in 64 bits, so a config too large to address is refused, never wrapped. */
static int ncf__model_shell(ncf_model **out, const ncf_config *cfg)
{
    static const char *const emb[6] = {"gmf_user", "mlp_user", "user_bias", "gmf_item", "mlp_item", "item_bias"};
    ncf_model *m;
    struct ncf__scratch *s;
    uint64_t off = 0;
    int rc, l, mf, cols[3];
    *out = NULL;
    if ((rc = ncf__check_config(cfg, "config")) != NCF_OK) return rc;
    m = NCF__ZNEW(ncf_model, 1);
    s = NCF__ZNEW(struct ncf__scratch, 1);
    if (!m || !s) {
        NCF_FREE(m);
        NCF_FREE(s);
        return ncf__fail(NCF_ERR_NOMEM, "out of memory for a model");
    }
    m->cfg = *cfg;
    m->scratch = s;
    mf = cfg->model == NCF_MF;
    s->F = cfg->model != NCF_MLP ? cfg->mf_dim : 0;
    s->H = cfg->model == NCF_NEUMF || cfg->model == NCF_MLP ? cfg->layers[0] / 2 : 0;
    s->nd = s->H ? cfg->num_layers - 1 : 0;
    s->top = s->nd ? cfg->layers[s->nd] : 0;
    if (!s->H) m->cfg.num_layers = 0;
    if (!(m->cfg.init_sd > 0)) m->cfg.init_sd = 0.01f;
    cols[0] = s->F, cols[1] = s->H, cols[2] = mf;
    {
        float **named[6];
        named[0] = &m->gmf_user, named[1] = &m->mlp_user, named[2] = &m->user_bias;
        named[3] = &m->gmf_item, named[4] = &m->mlp_item, named[5] = &m->item_bias;
        for (l = 0; l < 6; l++)
            if (cols[l % 3])
                ncf__add_tensor(m, &off, emb[l], l < 3 ? cfg->num_users : cfg->num_items, cols[l % 3], named[l]);
    }
    s->emb_params = (size_t)off;
    for (l = 1; l <= s->nd; l++) {
        ncf__add_tensor(m, &off, ncf__wname[l], cfg->layers[l - 1], cfg->layers[l], &m->w[l]);
        ncf__add_tensor(m, &off, ncf__bname[l], 1, cfg->layers[l], &m->b[l]);
    }
    if (!mf) ncf__add_tensor(m, &off, "w_out", s->F + s->top, 1, &m->w_out);
    ncf__add_tensor(m, &off, "b_out", 1, 1, &m->b_out);
    m->num_params = (size_t)off;
    if (off > (uint64_t)((size_t)-1 / sizeof(float))) {
        ncf_model_free(m);
        return ncf__fail(NCF_ERR_NOMEM, "a model of %s parameters is more than this machine addresses",
                         ncf__u64s(off, 0));
    }
    if (mf && !(s->tables.ones = NCF__NEW(float, s->F))) {
        ncf_model_free(m);
        return ncf__fail(NCF_ERR_NOMEM, "out of memory for a model");
    }
    for (l = 0; mf && l < s->F; l++) s->tables.ones[l] = 1.0f;
    *out = m;
    return NCF_OK;
}

/* Points the model at its tensors: v[t] the floats of tensor t, or (an int8 model read in
   place) NULL with q[t] its int8 rows and qs[t] their scales. */
static void ncf__point_views(ncf_model *m, float *const *v, const int8_t *const *q, const float *const *qs)
{
    struct ncf__scratch *s = m->scratch;
    int t, nemb;
    for (t = 0; t < m->num_tensors; t++) {
        s->tables.floats[t] = v[t], s->tables.int8[t] = q ? q[t] : NULL, s->tables.scales[t] = qs ? qs[t] : NULL;
        *s->tables.named[t] = v[t];
    }
    for (nemb = 0; nemb < m->num_tensors && m->tensors[nemb].offset < s->emb_params; nemb++) {}
    s->tables.n = nemb / 2, s->tables.gmf = s->F ? 0 : -1, s->tables.mlp = s->H ? !!s->F : -1;
    for (t = 0; t < nemb; t++) { /* the user tables, then the item tables in the same order */
        ncf__table *T = &s->tables.tab[t % s->tables.n];
        if (t < s->tables.n)
            T->user = v[t], T->quser = s->tables.int8[t], T->suser = s->tables.scales[t], T->D = m->tensors[t].cols;
        else T->item = v[t], T->qitem = s->tables.int8[t], T->sitem = s->tables.scales[t];
    }
    s->tables.gmf_weights = s->tables.ones ? s->tables.ones : m->w_out;
}

/* Views of a float block: embedding tensors at emb + offset, the rest at dense + (offset -
   emb_params). */
static void ncf__set_views(ncf_model *m, float *emb, float *dense)
{
    float *v[NCF_MAX_TENSORS];
    int t;
    for (t = 0; t < m->num_tensors; t++) {
        size_t o = m->tensors[t].offset;
        v[t] = o < m->scratch->emb_params ? emb + o : dense + (o - m->scratch->emb_params);
    }
    ncf__point_views(m, v, NULL, NULL);
}

/* The parameter block (and, for training, gradient, Adam and touched-row memory). */
static int ncf__own_params(ncf_model *m)
{
    struct ncf__scratch *s = m->scratch;
    size_t n = m->num_params;
    m->params = NCF__NEW(float, n);
#ifndef NCF_INFERENCE_ONLY
    m->grads = NCF__ZNEW(float, n);
    m->adam_m = NCF__ZNEW(float, n);
    m->adam_v = NCF__ZNEW(float, n);
    /* the touched-row lists hold each row once, so they never grow past the tables */
    s->touched.user = NCF__NEW(int32_t, m->cfg.num_users), s->touched.item = NCF__NEW(int32_t, m->cfg.num_items);
    s->touched.flag = NCF__ZNEW(uint8_t, (size_t)m->cfg.num_users + (size_t)m->cfg.num_items);
    if (!m->grads || !m->adam_m || !m->adam_v || !s->touched.user || !s->touched.item || !s->touched.flag) {
        NCF_FREE(m->params);
        m->params = NULL;
    }
#endif
    if (!m->params) return ncf__fail(NCF_ERR_NOMEM, "out of memory for %lu parameters", (unsigned long)n);
    ncf__set_views(m, m->params, m->params + s->emb_params);
    return NCF_OK;
}

#ifndef NCF_INFERENCE_ONLY
/* Normal(0, sd) or uniform(-lim, lim), element i of tensor t: a pure function of the seed. A
   model shard's user tables hold the whole model's rows from user0 on. */
static void ncf__init_tensor(ncf_model *m, int t, int normal, double scale)
{
    const ncf_tensor *T = &m->tensors[t];
    float *p = m->params + T->offset;
    int64_t i, n = (int64_t)T->rows * T->cols,
               first = t < m->scratch->tables.n ? (int64_t)NCF__USER0(m->scratch) * T->cols : 0;
    uint64_t key = ncf__hash3(m->cfg.seed, NCF__TAG_INIT, (uint64_t)t);
    NCF__OMP(parallel for schedule(static) num_threads(ncf__team(n > 65536)))
    for (i = 0; i < n; i++) {
        uint64_t a = ncf__hash3(key, (uint64_t)(first + i), 0), b = ncf__mix64(a);
        if (normal) {
            double u1 = ncf__uniform(a), u2 = ncf__uniform(b);
            if (u1 < 1e-300) u1 = 1e-300;
            p[i] = (float)(scale * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
        } else {
            p[i] = (float)(scale * (2.0 * ncf__uniform(a) - 1.0));
        }
    }
}

/* The initial weights, as the paper's. */
static void ncf__init_params(ncf_model *m)
{
    int t;
    for (t = 0; t < m->num_tensors; t++) {
        const ncf_tensor *T = &m->tensors[t];
        if (!strncmp(T->name, "gmf_", 4) || !strncmp(T->name, "mlp_", 4))                       /* embeddings */
            ncf__init_tensor(m, t, 1, m->cfg.init_sd == 0.01f ? 0.01 : (double)m->cfg.init_sd); /* 0.01f != 0.01 */
        else if (T->name[0] == 'b' || strstr(T->name, "bias")) ncf__init_tensor(m, t, 0, 0.0);  /* biases */
        else if (!strcmp(T->name, "w_out")) ncf__init_tensor(m, t, 0, sqrt(3.0 / T->rows));     /* lecun */
        else ncf__init_tensor(m, t, 0, sqrt(6.0 / (T->rows + T->cols)));                        /* glorot */
    }
}

NCFDEF int ncf_model_create(ncf_model **out, const ncf_config *cfg)
{
    ncf_model *m;
    int rc;
    if (!out || !cfg) return ncf__fail(NCF_ERR_ARG, "ncf_model_create: NULL argument");
    *out = NULL;
    if ((rc = ncf__model_shell(&m, cfg)) != NCF_OK) return rc;
    if ((rc = ncf__own_params(m)) != NCF_OK) {
        ncf_model_free(m);
        return rc;
    }
    ncf__init_params(m);
    *out = m;
    return NCF_OK;
}
#endif

#ifndef NCF_INFERENCE_ONLY
/* A model read in place (ncf_model_open) only serves: its parameters are the caller's. */
static int ncf__writable(const ncf_model *m, const char *what)
{
#ifdef NCF_MPI
    if (m->scratch->mpi.users)
        return ncf__fail(NCF_ERR_ARG, "%s: a model shard only trains over its ranks (ncf_mpi_train_epoch)", what);
#endif
    if (!m->scratch->in_place) return NCF_OK;
    return ncf__fail(NCF_ERR_ARG,
                     "%s: the model is read in place (ncf_model_open) and only serves; "
                     "ncf_load_mem makes a copy that can change",
                     what);
}
#endif

NCFDEF void ncf_model_free(ncf_model *m)
{
    int own; /* an in-place model's parameters, ids and rated items are the buffer's */
    if (!m) return;
    own = !(m->scratch && m->scratch->in_place);
    if (m->scratch) {
#ifndef NCF_INFERENCE_ONLY /* (a device never trains: none of these exist there) */
        ncf__free_buffers(m->scratch);
        NCF_FREE(m->scratch->touched.user);
        NCF_FREE(m->scratch->touched.item);
        NCF_FREE(m->scratch->touched.flag);
        ncf__features_free(m->scratch->feat);
#endif
        NCF_FREE(m->scratch->cache.user_order);
        NCF_FREE(m->scratch->cache.item_order);
        NCF_FREE(m->scratch->cache.proj);
        NCF_FREE(m->scratch->cache.gram[0]);
        NCF_FREE(m->scratch->cache.gram[1]);
        NCF_FREE(m->scratch->tables.ones);
        NCF_FREE(m->scratch);
    }
    if (own) {
        NCF_FREE(m->params);
#ifndef NCF_INFERENCE_ONLY
        NCF_FREE(m->grads);
        NCF_FREE(m->adam_m);
        NCF_FREE(m->adam_v);
#endif
        NCF_FREE(m->raw_user);
        NCF_FREE(m->raw_item);
        NCF_FREE(m->rated_ptr);
        NCF_FREE(m->rated);
        NCF_FREE(m->user_text);
        NCF_FREE(m->item_text);
        NCF_FREE(m->user_text_at);
        NCF_FREE(m->item_text_at);
    }
    NCF_FREE(m);
}

#ifndef NCF_INFERENCE_ONLY
NCFDEF int ncf_model_init_from(ncf_model *m, const ncf_model *gmf, const ncf_model *mlp, float alpha)
{
    const ncf_config *c, *g, *p;
    struct ncf__scratch *s;
    int l, F, top;
    if (!m || !gmf || !mlp) return ncf__fail(NCF_ERR_ARG, "ncf_model_init_from: NULL model");
    if ((l = ncf__writable(m, "ncf_model_init_from")) != NCF_OK) return l;
    if (!gmf->params || !mlp->params)
        return ncf__fail(NCF_ERR_ARG, "ncf_model_init_from: an int8 model read in place cannot start a NeuMF");
    c = &m->cfg, g = &gmf->cfg, p = &mlp->cfg, s = m->scratch;
    if (c->model != NCF_NEUMF || g->model != NCF_GMF || p->model != NCF_MLP)
        return ncf__fail(NCF_ERR_ARG,
                         "ncf_model_init_from: needs a NeuMF, a GMF and an MLP model (got types %d, %d, %d)",
                         (int)c->model, (int)g->model, (int)p->model);
    if (!(alpha >= 0.0f && alpha <= 1.0f))
        return ncf__fail(NCF_ERR_ARG, "ncf_model_init_from: alpha %g outside [0, 1]", alpha);
    if (g->num_users != c->num_users || p->num_users != c->num_users || g->num_items != c->num_items ||
        p->num_items != c->num_items)
        return ncf__fail(NCF_ERR_ARG, "ncf_model_init_from: users x items differ: NeuMF %dx%d, GMF %dx%d, MLP %dx%d",
                         c->num_users, c->num_items, g->num_users, g->num_items, p->num_users, p->num_items);
    if (g->mf_dim != c->mf_dim)
        return ncf__fail(NCF_ERR_ARG, "ncf_model_init_from: GMF has %d factors, NeuMF %d", g->mf_dim, c->mf_dim);
    for (l = 0; l < c->num_layers; l++)
        if (p->num_layers != c->num_layers || p->layers[l] != c->layers[l])
            return ncf__fail(NCF_ERR_ARG, "ncf_model_init_from: the MLP's layers differ from the NeuMF's (layer %d)",
                             l);
    F = s->F, top = s->top;
    memcpy(m->gmf_user, gmf->gmf_user, sizeof(float) * (size_t)c->num_users * F);
    memcpy(m->gmf_item, gmf->gmf_item, sizeof(float) * (size_t)c->num_items * F);
    memcpy(m->mlp_user, mlp->mlp_user, sizeof(float) * (size_t)c->num_users * s->H);
    memcpy(m->mlp_item, mlp->mlp_item, sizeof(float) * (size_t)c->num_items * s->H);
    for (l = 1; l <= s->nd; l++) {
        memcpy(m->w[l], mlp->w[l], sizeof(float) * (size_t)c->layers[l - 1] * c->layers[l]);
        memcpy(m->b[l], mlp->b[l], sizeof(float) * (size_t)c->layers[l]);
    }
    for (l = 0; l < F; l++) m->w_out[l] = alpha * gmf->w_out[l];
    for (l = 0; l < top; l++) m->w_out[F + l] = (1.0f - alpha) * mlp->w_out[l];
    m->b_out[0] = alpha * gmf->b_out[0] + (1.0f - alpha) * mlp->b_out[0];
    memset(m->adam_m, 0, sizeof(float) * m->num_params);
    memset(m->adam_v, 0, sizeof(float) * m->num_params);
    m->step = 0, m->epoch = 0;
    ncf_model_params_changed(m);
    return NCF_OK;
}
#endif

/* ---- >>forward: the forward pass: embeddings, the tower, the output logit -------------------- */
static int ncf__check_batch(const ncf_model *m, const int32_t *users, const int32_t *items, const void *labels,
                            int need_labels, int n)
{
    int j;
    if (!users || !items || (need_labels && !labels) || n <= 0)
        return ncf__fail(NCF_ERR_ARG, "batch: NULL array or size %d <= 0", n);
    for (j = 0; j < n; j++)
        if (users[j] < 0 || users[j] >= m->cfg.num_users || items[j] < 0 || items[j] >= m->cfg.num_items)
            return ncf__fail(
                NCF_ERR_ARG,
                "batch position %d: (user index %d, item index %d) outside [0,%d) x [0,%d) (indices, not ids)", j,
                (int)users[j], (int)items[j], m->cfg.num_users, m->cfg.num_items);
    for (j = 0; labels && j < n; j++)
        if (!(((const float *)labels)[j] >= 0.0f && ((const float *)labels)[j] <= NCF__MAX_CONFIDENCE))
            return ncf__fail(NCF_ERR_ARG,
                             "batch position %d: label %g (0 a negative, a positive's weight in "
                             "(0, 1e9])",
                             j, (double)((const float *)labels)[j]);
    return NCF_OK;
}

#define NCF__LANES 8 /* the output layer's partial sums */
#if NCF__VEC         /* NCF__LANES floats as one vector, and c += a * b on it under the rounding rule */
#if NCF__VW == 8
typedef ncf__vf ncf__v8;
#define NCF__V8FMA(c, a, b) NCF__VFMA(c, a, b)
#elif NCF__VW == 16
typedef ncf__vh ncf__v8;
#define NCF__V8FMA(c, a, b) NCF__HFMA(c, a, b)
#endif
#if NCF__VW >= 8
#define NCF__V8LOAD(v, p) memcpy(&(v), (p), sizeof(ncf__v8))
/* A group of NCF__LANES partial sums: one vector, or (SSE, NEON) two, since GCC keeps an
   8-float vector on such targets in memory, in a loop at a fraction of the speed. */
typedef ncf__v8 ncf__g8;
#define NCF__G8LOAD(v, p) NCF__V8LOAD(v, p)
#define NCF__G8MUL(y, x) ((y) = (x) * (y))
#define NCF__G8FMA(c, a, b) NCF__V8FMA(c, a, b)
#define NCF__G8FOLD(f, v) \
    ((f)[0] = (v)[0] + (v)[4], (f)[1] = (v)[1] + (v)[5], (f)[2] = (v)[2] + (v)[6], (f)[3] = (v)[3] + (v)[7])
#else
typedef struct {
    ncf__vf lo, hi;
} ncf__g8;
#define NCF__G8LOAD(v, p) (NCF__VLOAD((v).lo, (p)), NCF__VLOAD((v).hi, (p) + 4))
#define NCF__G8MUL(y, x) ((y).lo = (x).lo * (y).lo, (y).hi = (x).hi * (y).hi)
#define NCF__G8FMA(c, a, b) \
    do { \
        NCF__VFMA((c).lo, (a).lo, (b).lo); \
        NCF__VFMA((c).hi, (a).hi, (b).hi); \
    } while (0)
#define NCF__G8FOLD(f, v) \
    do { \
        ncf__vf s_ = (v).lo + (v).hi; \
        memcpy((f), &s_, sizeof s_); \
    } while (0)
#endif

/* The group's partial sums added pairwise as ncf__output_sum adds them, each rounded to float. */
static float ncf__pairwise8(const ncf__g8 *v)
{
    float q[4];
    NCF__G8FOLD(q, *v);
    q[0] += q[2], q[1] += q[3];
    return q[0] + q[1];
}
#endif

/* The output layer of one (user u, item i) with top-layer activations h: the same sums in
   the same order for training, evaluation and serving, so all three give one logit. Term d
   of the GMF part, then of the MLP part, goes to partial sum d % NCF__LANES, so the sums
   are independent chains (a single chain of F + top multiply-adds waited on each); the
   partial sums then add pairwise. */
static float ncf__output_sum(const float *gu, const float *gi, const float *gw, int F, const float *wh, const float *h,
                             int top)
{
    float p[NCF__LANES] = {0};
    int d = 0, t = 0, j, w;
#if NCF__VEC /* the lanes as one vector, as far as whole groups go in order: the same sums */
    ncf__g8 v, x, y, c;
    memset(&v, 0, sizeof v);
    for (; d + NCF__LANES <= F; d += NCF__LANES) {
        NCF__G8LOAD(x, gu + d), NCF__G8LOAD(y, gi + d), NCF__G8LOAD(c, gw + d);
        NCF__G8MUL(y, x);
        NCF__G8FMA(v, c, y);
    }
    for (; d == F && t + NCF__LANES <= top; t += NCF__LANES) {
        NCF__G8LOAD(x, wh + t), NCF__G8LOAD(y, h + t);
        NCF__G8FMA(v, x, y);
    }
    if (d == F && t == top) return ncf__pairwise8(&v);
    memcpy(p, &v, sizeof p);
#endif
    for (; d < F; d++) p[d % NCF__LANES] = NCF__MADD(gw[d], gu[d] * gi[d], p[d % NCF__LANES]);
    for (; t < top; t++) p[t % NCF__LANES] = NCF__MADD(wh[t], h[t], p[t % NCF__LANES]);
    for (w = NCF__LANES / 2; w >= 1; w /= 2)
        for (j = 0; j < w; j++) p[j] += p[j + w];
    return p[0];
}

#if NCF__VEC
/* ncf__output_sum of one user against four items (gi[q], h[q]) whose F and top are whole
   groups of NCF__LANES: each item's sums are the same operations in the same order, so the
   same bits, but the four chains overlap where one item's waited on each multiply-add. */
static void ncf__output_sum4(const float *gu, const float *const *gi, const float *gw, int F, const float *wh,
                             const float *const *h, int top, float *out)
{
    ncf__g8 v0, v1, v2, v3, x, y, c;
    int d, t;
    memset(&v0, 0, sizeof v0), v1 = v0, v2 = v0, v3 = v0;
    for (d = 0; d < F; d += NCF__LANES) {
        NCF__G8LOAD(x, gu + d), NCF__G8LOAD(c, gw + d);
        NCF__G8LOAD(y, gi[0] + d), NCF__G8MUL(y, x);
        NCF__G8FMA(v0, c, y);
        NCF__G8LOAD(y, gi[1] + d), NCF__G8MUL(y, x);
        NCF__G8FMA(v1, c, y);
        NCF__G8LOAD(y, gi[2] + d), NCF__G8MUL(y, x);
        NCF__G8FMA(v2, c, y);
        NCF__G8LOAD(y, gi[3] + d), NCF__G8MUL(y, x);
        NCF__G8FMA(v3, c, y);
    }
    for (t = 0; t < top; t += NCF__LANES) {
        NCF__G8LOAD(x, wh + t);
        NCF__G8LOAD(y, h[0] + t);
        NCF__G8FMA(v0, x, y);
        NCF__G8LOAD(y, h[1] + t);
        NCF__G8FMA(v1, x, y);
        NCF__G8LOAD(y, h[2] + t);
        NCF__G8FMA(v2, x, y);
        NCF__G8LOAD(y, h[3] + t);
        NCF__G8FMA(v3, x, y);
    }
    out[0] = ncf__pairwise8(&v0), out[1] = ncf__pairwise8(&v1), out[2] = ncf__pairwise8(&v2);
    out[3] = ncf__pairwise8(&v3);
}
#endif

/* The logit: the output bias, then bias (the user's and the item's, MF), then the sums. */
static float ncf__output_biased(const ncf_model *m, const float *gu, const float *gi, float bias, const float *h)
{
    const struct ncf__scratch *s = m->scratch;
    float z = m->b_out[0];
    if (m->user_bias) z += bias;
    return z + ncf__output_sum(gu, gi, s->tables.gmf_weights, s->F, m->w_out ? m->w_out + s->F : NULL, h, s->top);
}

/* The same with the user's bias ub and item i's from the model. */
static float ncf__output(const ncf_model *m, const float *gu, const float *gi, float ub, int i, const float *h)
{
    return ncf__output_biased(m, gu, gi, m->user_bias ? ub + m->item_bias[i] : 0.0f, h);
}

/* An int8 row as floats: scale * q, one rounding, wherever a row is read (served in place,
   loaded as a copy, re-saved), so all of them see the same values. */
static void ncf__dequantize(const int8_t *q, float scale, int n, float *out)
{
    int d;
    for (d = 0; d < n; d++) out[d] = scale * (float)q[d];
}

/* Row r of an embedding table on a side (0 users, 1 items) as floats: the row itself, or an
   int8 row dequantized into tmp. */
static const float *ncf__emb_row(const ncf__table *T, int side, int r, float *tmp)
{
    const float *f = side ? T->item : T->user;
    if (f) return f + (size_t)r * T->D;
    ncf__dequantize((side ? T->qitem : T->quser) + (size_t)r * T->D, (side ? T->sitem : T->suser)[r], T->D, tmp);
    return tmp;
}

/* Multiply-adds of one row's forward pass. */
static float ncf__row_macs(const ncf_model *m)
{
    const struct ncf__scratch *s = m->scratch;
    float w = (float)(s->F + s->top + 1);
    int l;
    for (l = 1; l <= s->nd; l++) w += (float)m->cfg.layers[l - 1] * m->cfg.layers[l];
    return w;
}

/* The first dense layer on gathered [user; item] rows [r0, r1) of x0 [..][2H]: the user half
   with the bias, then the item half summed on its own and added once, as evaluation adds its
   cached item half: W1 [u; i] = (b1 + W1u u) + W1i i. So both give the same activations. */
static void ncf__first_layer(const ncf_model *m, float *x1, const float *x0, int r0, int r1)
{
    int H = m->scratch->H, L1 = m->cfg.layers[1];
    ncf__gemm_rows(x1, L1, x0, (ptrdiff_t)2 * H, 1, m->w[1], L1, m->b[1], r0, r1, L1, H, 0);
    ncf__gemm_rows(x1, L1, x0 + H, (ptrdiff_t)2 * H, 1, m->w[1] + (size_t)H * L1, L1, NULL, r0, r1, L1, H,
                   NCF__ADD | NCF__RELU);
}

/* The forward pass of batch rows [r0, r1) (a tile-aligned range): activations and logits
   into a; reads m only. Rows are independent, so any split of a batch gives the same. */
static void ncf__forward_rows(const ncf_model *m, ncf__acts *a, const int32_t *users, const int32_t *items, int r0,
                              int r1)
{
    const struct ncf__scratch *s = m->scratch;
    int F = s->F, H = s->H, l, b, d;
    const int *L = m->cfg.layers;
    for (b = r0; b < r1; b++) {
        if (b + NCF__AHEAD < r1) {
            size_t u = (size_t)users[b + NCF__AHEAD], i = (size_t)items[b + NCF__AHEAD];
            for (d = 0; d < F; d += 16) NCF__PREFETCH(m->gmf_user + u * F + d), NCF__PREFETCH(m->gmf_item + i * F + d);
            for (d = 0; d < H; d += 16) NCF__PREFETCH(m->mlp_user + u * H + d), NCF__PREFETCH(m->mlp_item + i * H + d);
        }
        if (F) {
            const float *gu = m->gmf_user + (size_t)users[b] * F, *gi = m->gmf_item + (size_t)items[b] * F;
            for (d = 0; d < F; d++) a->gmf[(size_t)b * F + d] = gu[d] * gi[d];
        }
        if (H) {
            memcpy(a->x[0] + (size_t)b * 2 * H, m->mlp_user + (size_t)users[b] * H, sizeof(float) * H);
            memcpy(a->x[0] + (size_t)b * 2 * H + H, m->mlp_item + (size_t)items[b] * H, sizeof(float) * H);
        }
    }
    if (H) ncf__first_layer(m, a->x[1], a->x[0], r0, r1);
    for (l = 2; l <= s->nd; l++)
        ncf__gemm_rows(a->x[l], L[l], a->x[l - 1], L[l - 1], 1, m->w[l], L[l], m->b[l], r0, r1, L[l], L[l - 1],
                       NCF__RELU);
    for (b = r0; b < r1; b++)
        a->logit[b] =
            ncf__output(m, F ? m->gmf_user + (size_t)users[b] * F : NULL, F ? m->gmf_item + (size_t)items[b] * F : NULL,
                        m->user_bias ? m->user_bias[users[b]] : 0.0f, items[b], a->x[s->nd] + (size_t)b * s->top);
}

/* Whether n rows are worth a parallel region. */
static int ncf__rows_parallel(const ncf_model *m, int n)
{
    return n > NCF__MR && n * ncf__row_macs(m) > 4 * NCF__PAR_WORK;
}

static int ncf__score_pairs(const ncf_model *m, const int32_t *users, const int32_t *items, int n, float *logits);

NCFDEF int ncf_predict_index(const ncf_model *m, const int32_t *users, const int32_t *items, int n, float *logits)
{
    ncf__acts a;
    int rc, done, chunk;
    if (!m || !logits) return ncf__fail(NCF_ERR_ARG, "ncf_predict_index: NULL model or output");
    if ((rc = ncf__check_batch(m, users, items, NULL, 0, n)) != NCF_OK) return rc;
    if (!m->params) return ncf__score_pairs(m, users, items, n, logits); /* int8 rows read in place */
    chunk = n < 1024 ? n : 1024; /* scores do not depend on it (see the kernels) */
    if (!ncf__acts_alloc(m, &a, chunk)) return ncf__fail(NCF_ERR_NOMEM, "out of memory scoring a batch of %d", chunk);
    for (done = 0; done < n; done += chunk) {
        int k = n - done < chunk ? n - done : chunk;
        ncf__team team = NCF__TEAM_INIT;
        NCF__PARALLEL(ncf__rows_parallel(m, k))
        {
            ncf__ctx x = ncf__join(&team);
            int64_t lo, hi;
            while (ncf__claim(&x, NCF__TILES(k), ncf__tile_grain(ncf__row_macs(m)), &lo, &hi))
                ncf__forward_rows(m, &a, users + done, items + done, (int)lo * NCF__MR,
                                  hi * NCF__MR < k ? (int)hi * NCF__MR : k);
        }
        memcpy(logits + done, a.logit, sizeof(float) * (size_t)k);
    }
    ncf__acts_free(&a);
    return NCF_OK;
}

#ifndef NCF_INFERENCE_ONLY
/* Whether ncf_model_average takes models of c's type: MF and GMF, whose logits are sums over
   factors. */
static int ncf__averages(const ncf_config *c) { return c->model == NCF_MF || c->model == NCF_GMF; }

/* a's ids and rated items copied into m (of a's users and items) in place of its own. */
static int ncf__copy_model_ids(ncf_model *m, const ncf_model *a)
{
    int U = a->cfg.num_users, I = a->cfg.num_items;
    int64_t *ru = a->raw_user ? NCF__NEW(int64_t, U) : NULL, *ri = a->raw_item ? NCF__NEW(int64_t, I) : NULL;
    int rated = a->rated_ptr && a->rated; /* (both or neither) */
    int64_t *rp = rated ? NCF__NEW(int64_t, (size_t)U + 1) : NULL, *uat = NULL, *iat = NULL;
    uint8_t *rv = rated ? NCF__NEW(uint8_t, a->rated_ptr[U] ? a->rated_ptr[U] : 1) : NULL;
    char *ut = NULL, *it = NULL;
    if ((a->raw_user && !ru) || (a->raw_item && !ri) || (rated && (!rp || !rv)) ||
        ncf__copy_text_ids(a->user_text, a->user_text_at, U, &ut, &uat) != NCF_OK ||
        ncf__copy_text_ids(a->item_text, a->item_text_at, I, &it, &iat) != NCF_OK) {
        NCF_FREE(ru), NCF_FREE(ri), NCF_FREE(rp), NCF_FREE(rv), NCF_FREE(ut), NCF_FREE(uat);
        return ncf__fail(NCF_ERR_NOMEM, "out of memory for the id maps");
    }
    if (ru) memcpy(ru, a->raw_user, sizeof(int64_t) * (size_t)U);
    if (ri) memcpy(ri, a->raw_item, sizeof(int64_t) * (size_t)I);
    if (rp) memcpy(rp, a->rated_ptr, sizeof(int64_t) * ((size_t)U + 1));
    if (rv) memcpy(rv, a->rated, (size_t)a->rated_ptr[U]);
    NCF_FREE(m->raw_user), NCF_FREE(m->raw_item), NCF_FREE(m->rated_ptr), NCF_FREE(m->rated);
    NCF_FREE(m->user_text), NCF_FREE(m->item_text), NCF_FREE(m->user_text_at), NCF_FREE(m->item_text_at);
    m->raw_user = ru, m->raw_item = ri, m->rated_ptr = rp, m->rated = rv;
    m->user_text = ut, m->user_text_at = uat, m->item_text = it, m->item_text_at = iat;
    return ncf__build_id_maps(m);
}

/* Rows r of models' side tables (0 users, 1 items) side by side into m's, each times scale. */
static void ncf__average_rows(ncf_model *m, ncf_model *const *models, int n, int side, float scale)
{
    int64_t r, rows = side ? m->cfg.num_items : m->cfg.num_users;
    int k, j, F = m->cfg.mf_dim;
    for (r = 0; r < rows; r++) {
        float *dst = (side ? m->gmf_item : m->gmf_user) + (size_t)r * F;
        for (k = 0; k < n; k++) {
            int f = models[k]->cfg.mf_dim;
            const float *src = (side ? models[k]->gmf_item : models[k]->gmf_user) + (size_t)r * f;
            for (j = 0; j < f; j++) dst[j] = src[j] * scale;
            dst += f;
        }
    }
}

NCFDEF int ncf_model_average(ncf_model **out, ncf_model *const *models, int n)
{
    const ncf_model *a;
    ncf_model *m = NULL;
    ncf_config c;
    int64_t dim = 0, r;
    int k, rc;
    if (!out) return ncf__fail(NCF_ERR_ARG, "ncf_model_average: NULL out");
    *out = NULL;
    if (!models || n < 1 || !models[0]) return ncf__fail(NCF_ERR_ARG, "ncf_model_average: need 1 or more models");
    a = models[0];
    for (k = 0; k < n; k++) {
        const ncf_model *b = models[k];
        if (!b) return ncf__fail(NCF_ERR_ARG, "ncf_model_average: model %d is NULL", k);
        if (!b->params) return ncf__fail(NCF_ERR_ARG, "ncf_model_average: model %d is int8, read in place", k);
        if (!ncf__averages(&b->cfg) || b->cfg.model != a->cfg.model)
            return ncf__fail(NCF_ERR_ARG,
                             "ncf_model_average: needs MF models or GMF models (model %d is of type %d, model 0 %d)", k,
                             (int)b->cfg.model, (int)a->cfg.model);
        if (b->cfg.num_users != a->cfg.num_users || b->cfg.num_items != a->cfg.num_items)
            return ncf__fail(NCF_ERR_ARG, "ncf_model_average: model %d has %d users and %d items, model 0 %d and %d", k,
                             b->cfg.num_users, b->cfg.num_items, a->cfg.num_users, a->cfg.num_items);
        dim += b->cfg.mf_dim;
    }
    c = a->cfg;
    c.mf_dim = dim > INT32_MAX ? INT32_MAX : (int)dim; /* (too wide: the config's check says so) */
    if ((rc = ncf_model_create(&m, &c)) != NCF_OK) return rc;
    ncf__average_rows(m, models, n, 0, c.model == NCF_MF ? 1.0f / sqrtf((float)n) : 1.0f);
    ncf__average_rows(m, models, n, 1, c.model == NCF_MF ? 1.0f / sqrtf((float)n) : 1.0f);
    for (r = 0; c.model == NCF_MF && r < c.num_users; r++)
        for (m->user_bias[r] = 0, k = 0; k < n; k++) m->user_bias[r] += models[k]->user_bias[r] / (float)n;
    for (r = 0; c.model == NCF_MF && r < c.num_items; r++)
        for (m->item_bias[r] = 0, k = 0; k < n; k++) m->item_bias[r] += models[k]->item_bias[r] / (float)n;
    for (r = 0, k = 0; c.model == NCF_GMF && k < n; k++)
        for (dim = 0; dim < models[k]->cfg.mf_dim; dim++) m->w_out[r++] = models[k]->w_out[dim] / (float)n;
    for (m->b_out[0] = 0, k = 0; k < n; k++) m->b_out[0] += models[k]->b_out[0] / (float)n;
    m->step = a->step, m->epoch = a->epoch;
    if ((rc = ncf__copy_model_ids(m, a)) != NCF_OK ||
        (rc = ncf__features_average(m, models, n, c.model == NCF_MF ? 1.0f / sqrtf((float)n) : 1.0f)) != NCF_OK) {
        ncf_model_free(m);
        return rc;
    }
    ncf_model_params_changed(m);
    *out = m;
    return NCF_OK;
}
#endif /* NCF_INFERENCE_ONLY */

/* ---- >>score (src/score.c) ------------------------------------------------------------------- */
/* Scoring one user against many items: the item projection and its cache, the lanes. */
/* Scoring one user against many items uses the split first layer:
   W1 [u; i] = W1u u + W1i i, with W1i i precomputed once per item. */

#define NCF__SCORE_CHUNK 48 /* the most items serving scores at a time (ncf__score_chunk) */
#define NCF__FOLD_CHUNK 32  /* a fold-in's examples at a time (its sums follow this order) */

/* Items a block of the cached projection holds, and scoring takes at a time with it: one to
   a vector lane (ncf__score_lanes) with AVX or AVX-512, whose multiply-adds read a broadcast
   weight straight from memory; else 1 (row by row: with 4 lanes, SSE's broadcasts cost more
   than the lanes win, 9-15% slower). */
#if NCF__VEC && NCF__VW >= 8
#define NCF__PB NCF__VW
#else
#define NCF__PB 1
#endif

/* Where the projection of R rows a block holds item i's value d: its block, row d of it, the
   item's lane. */
static size_t ncf__proj_at(int R, size_t i, size_t d)
{
    return ((i / NCF__PB) * (size_t)R + d) * NCF__PB + i % NCF__PB;
}

/* Rows of a projection block: layers[1], then in blocks of lanes the item's GMF row too, so
   that a block's whole score reads vectors. */
static int ncf__proj_rows(const ncf_model *m) { return m->cfg.layers[1] + (NCF__PB > 1 ? m->scratch->F : 0); }

/* Scoring buffers for n items at a time, carved from one block: the heap's, or the caller's
   workspace (ncf_rec_workspace_size). */
typedef struct {
    float *h[2]; /* [n][widest dense layer] activations */
    float *pu;   /* [layers[1]] user half of the first layer, plus its bias */
    float *urow; /* [F + H] the user's GMF and MLP rows, when int8 */
    float *irow; /* [n][H] the items' MLP rows, when no item projection is cached */
    float *gi;   /* [F] an item's GMF row, when int8 */
    float *sc;   /* [n] scores */
} ncf__eval_buf;

#define NCF__ALIGN_FLOATS 16 /* each buffer starts on a 64-byte line */

static size_t ncf__round_floats(size_t n) { return NCF__CEIL_DIV(n, NCF__ALIGN_FLOATS) * NCF__ALIGN_FLOATS; }

static int ncf__widest_dense(const ncf_model *m)
{
    int l, w = 1;
    for (l = 1; l <= m->scratch->nd; l++)
        if (m->cfg.layers[l] > w) w = m->cfg.layers[l];
    return w;
}

/* Floats of an eval buffer for n items; with mem, also carves it from mem. */
static size_t ncf__eval_buf_carve(ncf__eval_buf *e, const ncf_model *m, int n, float *mem)
{
    const struct ncf__scratch *s = m->scratch;
    size_t at = 0, w = (size_t)ncf__widest_dense(m), sizes[7];
    float **dst[7];
    int q;
    size_t lanes = (size_t)(n > NCF__PB ? n : NCF__PB); /* (ncf__score_lanes scores NCF__PB at a time) */
    dst[0] = &e->h[0], sizes[0] = lanes * w;
    dst[1] = &e->h[1], sizes[1] = lanes * w;
    dst[2] = &e->pu, sizes[2] = w;
    dst[3] = &e->urow, sizes[3] = (size_t)s->F + s->H;
    dst[4] = &e->irow, sizes[4] = (size_t)n * s->H;
    dst[5] = &e->gi, sizes[5] = (size_t)s->F;
    dst[6] = &e->sc, sizes[6] = (size_t)n;
    for (q = 0; q < 7; q++) {
        if (mem) *dst[q] = mem + at;
        at += ncf__round_floats(sizes[q] ? sizes[q] : 1);
    }
    return at;
}

/* Items serving scores at a time: 48, a whole number of every target's tall tile (12 rows
   with AVX2, SSE and NEON, 16 with AVX-512), while their activations take at most 64 KB, so
   they stay near the core; else 32, which bounds a thread's buffers by the widest layer. */
static size_t ncf__floats_per_item(const ncf_model *m)
{
    return 2 * (size_t)ncf__widest_dense(m) + (size_t)m->scratch->H + 1; /* (ncf__eval_buf_carve) */
}

static int ncf__score_chunk(const ncf_model *m)
{
    return ncf__floats_per_item(m) * sizeof(float) * NCF__SCORE_CHUNK <= 65536 ? NCF__SCORE_CHUNK : 32;
}

#ifndef NCF_INFERENCE_ONLY
static void ncf__eval_buf_free(ncf__eval_buf *e) { NCF_FREE(e->h[0]); }

/* Items scored at a time in evaluation: as many as 1 MB of activations holds, at least
   serving's chunk, at most n. A thread's buffers are then bounded by the model's widest
   layer, whatever the catalogue. */
static int ncf__eval_chunk(const ncf_model *m, int n)
{
    size_t c = ((size_t)1 << 18) / ncf__floats_per_item(m), sc = (size_t)ncf__score_chunk(m);
    c = c < sc ? sc : c / sc * sc; /* (whole chunks of serving's, so whole blocks of lanes) */
    return (int)(c < (size_t)n ? c : (size_t)(n > 0 ? n : 1));
}

static int ncf__eval_buf_alloc(ncf__eval_buf *e, const ncf_model *m, int n)
{
    float *mem = NCF__NEW(float, ncf__eval_buf_carve(e, m, n, NULL));
    if (!mem) return 0;
    ncf__eval_buf_carve(e, m, n, mem);
    return 1;
}
#endif

/* Floats of the projection's blocks (none without lanes: its rows are then the cache). */
static size_t ncf__proj_blocked(const ncf_model *m)
{
    return NCF__PB == 1 ? 0 : NCF__CEIL_DIV((size_t)m->cfg.num_items, NCF__PB) * NCF__PB * (size_t)ncf__proj_rows(m);
}

/* Whether the projection's rows, [num_items][layers[1]], come after its blocks: they cost items
   x layers[1] floats, which a file's parameters need not pay for (a 1-wide item embedding under
   a 65,536-wide layer), so only while the whole stays within 4 parameters' worth (and 1M
   floats). Without blocks, past that there is no cache, and scoring projects each chunk as it
   goes, with the same scores; with them, past that candidate lists take their lanes from the
   blocks (ncf__score_lanes), and past that for the blocks alone there is no cache. */
static int ncf__proj_fits(const ncf_model *m, size_t floats)
{
    return (uint64_t)floats <= 4 * (uint64_t)m->num_params + (1 << 20); /* (no double math on a device) */
}

static int ncf__proj_has_rows(const ncf_model *m)
{
    return ncf__proj_fits(m, ncf__proj_blocked(m) + (size_t)m->cfg.num_items * m->cfg.layers[1]);
}

/* The projection's rows, or NULL. (Without lanes the cache is its rows.) */
static const float *ncf__proj_row_major(const ncf_model *m, const float *proj)
{
    return NCF__PB == 1 || !proj ? proj : ncf__proj_has_rows(m) ? proj + ncf__proj_blocked(m) : NULL;
}

/* Item halves of the first dense layer, or NULL without MLP. With lanes (NCF__PB > 1) first
   in blocks of NCF__PB items, each [ncf__proj_rows][NCF__PB] (item i's d-th value at
   ncf__proj_at), so that one vector load reads a value of a whole block's items
   (ncf__score_lanes); then, where they fit, as rows, [num_items][layers[1]], which a list of
   candidates reads an item at a time (a row is a line or two; a block's column, a line a value). */
static float *ncf__item_projection(const ncf_model *m, int *rc)
{
    const struct ncf__scratch *s = m->scratch;
    int L1, R, i0, rows, n, items = m->cfg.num_items, keep = ncf__proj_has_rows(m);
    size_t blocked, d, i;
    float *proj, *tmp;
    *rc = NCF_OK;
    if (!s->H || !m->mlp_item) return NULL; /* (an int8 model projects as it scores) */
    L1 = m->cfg.layers[1], R = ncf__proj_rows(m), blocked = ncf__proj_blocked(m);
    if (!ncf__proj_fits(m, blocked ? blocked : (size_t)items * L1)) return NULL;
    /* The rows are made a run at a time: all of them into their place when they are kept, else
       64K floats of them, one block at least (at most 4 MB: 16 items of a 65,536-wide layer). */
    rows = keep ? items : (65536 / L1) / NCF__PB * NCF__PB;
    rows = rows < NCF__PB ? NCF__PB : rows > items ? items : rows;
    proj = NCF__ZNEW(float, blocked + (keep ? (size_t)items * L1 : 0));
    tmp = !proj ? NULL : keep ? proj + blocked : NCF__NEW(float, (size_t)rows *L1);
    if (!proj || !tmp) {
        NCF_FREE(proj);
        if (!keep) NCF_FREE(tmp);
        *rc = ncf__fail(NCF_ERR_NOMEM, "out of memory for the item projection");
        return NULL;
    }
    for (i0 = 0; i0 < items; i0 += rows) { /* rows at a time, then into their blocks */
        float *at = keep ? tmp + (size_t)i0 * L1 : tmp;
        n = items - i0 < rows ? items - i0 : rows;
        ncf__gemm(at, L1, m->mlp_item + (size_t)i0 * s->H, s->H, 1, m->w[1] + (size_t)s->H * L1, L1, NULL, n, L1, s->H,
                  0);
        for (i = 0; blocked && i < (size_t)n; i++)
            for (d = 0; d < (size_t)L1; d++) proj[ncf__proj_at(R, (size_t)i0 + i, d)] = at[i * L1 + d];
    }
    for (i = 0; blocked && i < (size_t)items; i++) /* the GMF rows into their blocks */
        for (d = 0; d < (size_t)s->F; d++) proj[ncf__proj_at(R, i, (size_t)L1 + d)] = m->gmf_item[i * s->F + d];
    if (!keep) NCF_FREE(tmp);
    return proj;
}

#ifdef NCF__BARE_METAL /* a microcontroller keeps its RAM: it projects each chunk as it scores, the same scores */
#define NCF__KEEPS_PROJECTION 0
#else
#define NCF__KEEPS_PROJECTION 1
#endif

/* The cached item projection, when it is that of the current parameters, or NULL. The cache
   is rebuilt only where the model is being changed anyway (after an epoch, a load, pre-training,
   ncf_model_params_changed), so serving only reads the model. */
static const float *ncf__cached_projection(const ncf_model *m)
{
    const struct ncf__scratch *s = m->scratch;
    return NCF__KEEPS_PROJECTION && s->cache.proj && s->cache.step == m->step ? s->cache.proj : NULL;
}

#ifndef NCF_INFERENCE_ONLY
/* The projection for scoring: the cache, or one of the caller's own (*own, freed by it). */
static const float *ncf__projection_for(const ncf_model *m, float **own, int *rc)
{
    const float *p = ncf__cached_projection(m);
    *own = NULL, *rc = NCF_OK;
    return p || !m->scratch->H ? p : (*own = ncf__item_projection(m, rc));
}
#endif

/* What serving computes once, for the current parameters. Out of memory leaves no cache;
   scoring then makes its own projection, a fold-in its own Gram matrix. */
static void ncf__refresh_cache(ncf_model *m)
{
    struct ncf__scratch *s = m->scratch;
    int rc;
    NCF_FREE(s->cache.proj);
    s->cache.proj = NCF__KEEPS_PROJECTION ? ncf__item_projection(m, &rc) : NULL;
    ncf__refresh_gram(m);
    s->cache.step = m->step;
}

/* ncf__outfile for items cand[0..n) (first.. when NULL) of one user, their top activations h
   row by row, into e->sc: the per-logit work hoisted out of the loop, so that it runs at the
   rate of the sums. */
static void ncf__output_items(const ncf_model *m, const float *gu, float ub, const int32_t *cand, int first, int n,
                              const float *h, ncf__eval_buf *e)
{
    const struct ncf__scratch *s = m->scratch;
    const ncf__table *T = s->F ? &s->tables.tab[s->tables.gmf] : NULL;
    const float *gw = s->tables.gmf_weights, *wh = m->w_out ? m->w_out + s->F : NULL;
    int j, F = s->F, top = s->top;
    j = 0;
#if NCF__VEC
    if (F % NCF__LANES == 0 && top % NCF__LANES == 0 && (!T || T->item))
        for (; j + 4 <= n; j += 4) {
            const float *gi[4], *hj[4];
            float sum[4];
            int q;
            for (q = 0; q < 4; q++) {
                int i = cand ? cand[j + q] : first + j + q;
                gi[q] = T ? T->item + (size_t)i * F : NULL, hj[q] = h + (size_t)(j + q) * top;
            }
            ncf__output_sum4(gu, gi, gw, F, wh, hj, top, sum);
            for (q = 0; q < 4; q++) {
                int i = cand ? cand[j + q] : first + j + q;
                float z = m->b_out[0], bias = m->user_bias ? ub + m->item_bias[i] : 0.0f;
                if (m->user_bias) z += bias;
                e->sc[j + q] = z + sum[q];
            }
        }
#endif
    for (; j < n; j++) {
        int i = cand ? cand[j] : first + j;
        const float *gi = T ? ncf__emb_row(T, 1, i, e->gi) : NULL;
        float z = m->b_out[0], bias = m->user_bias ? ub + m->item_bias[i] : 0.0f; /* (rounded as ncf__outfile) */
        if (m->user_bias) z += bias;
        e->sc[j] = z + ncf__output_sum(gu, gi, gw, F, wh, h + (size_t)j * top, top);
    }
}

#if NCF__PB > 1
/* Outputs [n0, n0 + NB) of a dense layer for a block of items, one to a vector lane: X and Y
   are [width][NCF__VW], W is [K][N]. Each output's sum runs from its bias in k order with
   the tiles' multiply-add and clamp (NCF__TILE_STORE), so a lane's value is the row path's
   bit for bit; the NB sums are independent chains, each weight a broadcast. With FIRST, X is
   the block's projection and input k the first layer's value, P[k] + X[k] clamped as the row
   path clamps it, made as it is read rather than stored and read back. */
#define NCF__LANES_OUT(name, NB, FIRST) \
    static void name(const float *X, const float *P, int K, const float *W, const float *bias, int N, int n0, \
                     float *Y) \
    { \
        ncf__vf a[NB], x, w, z = {0}; \
        int j, k; \
        NCF__UNROLL \
        for (j = 0; j < NB; j++) NCF__SPLAT(ncf__vf, NCF__VW, a[j], bias ? bias[n0 + j] : 0.0f); \
        for (k = 0; k < K; k++) { \
            NCF__VLOAD(x, X + (size_t)k * NCF__VW); \
            if (FIRST) { \
                NCF__SPLAT(ncf__vf, NCF__VW, w, P[k]); \
                x = w + x; \
                x = (ncf__vf)((x > z) & (ncf__vi)x); /* (v > 0 ? v : 0) */ \
            } \
            NCF__UNROLL \
            for (j = 0; j < NB; j++) { \
                NCF__SPLAT(ncf__vf, NCF__VW, w, W[(size_t)k * N + n0 + j]); \
                NCF__VFMA(a[j], w, x); \
            } \
        } \
        NCF__UNROLL \
        for (j = 0; j < NB; j++) { \
            a[j] = (ncf__vf)(~(a[j] < z) & (ncf__vi)a[j]); \
            NCF__VSTORE(Y + (size_t)(n0 + j) * NCF__VW, a[j]); \
        } \
    }
NCF__LANES_OUT(ncf__lanes_out16, 16, 0)
NCF__LANES_OUT(ncf__lanes_out8, 8, 0)
NCF__LANES_OUT(ncf__lanes_out1, 1, 0)
NCF__LANES_OUT(ncf__lanes_first16, 16, 1)
NCF__LANES_OUT(ncf__lanes_first8, 8, 1)
NCF__LANES_OUT(ncf__lanes_first1, 1, 1)

#if NCF__VW == 8
/* Outputs [n0, n0 + NO) of a dense layer for three blocks at once, the same sums in the same
   order as NCF__LANES_OUT's, so the same bits: X holds the blocks' inputs [3][K][NCF__VW] at
   a stride of xs floats, Y takes [3][N][NCF__VW]. With AVX2's 16 registers, 8 outputs of one
   block read 9 vectors for 8 multiply-adds, and the loads, not the FMAs, set the pace; 4
   outputs of 3 blocks read 7 for 12. The empty asm keeps each input in a register: without
   it GCC reads it from memory again in each of its 4 multiply-adds. */
#define NCF__LANES3_OUT(name, NO) \
    static void name(const float *X, size_t xs, int K, const float *W, const float *bias, int N, int n0, float *Y, \
                     size_t ys) \
    { \
        ncf__vf a[3][NO], x[3], w, z = {0}; \
        int b, j, k; \
        NCF__UNROLL \
        for (j = 0; j < NO; j++) { \
            NCF__SPLAT(ncf__vf, NCF__VW, a[0][j], bias ? bias[n0 + j] : 0.0f); \
            a[1][j] = a[0][j], a[2][j] = a[0][j]; \
        } \
        for (k = 0; k < K; k++) { \
            NCF__UNROLL \
            for (b = 0; b < 3; b++) { \
                NCF__VLOAD(x[b], X + b * xs + (size_t)k * NCF__VW); \
                __asm__("" : "+x"(x[b])); \
            } \
            NCF__UNROLL \
            for (j = 0; j < NO; j++) { \
                NCF__SPLAT(ncf__vf, NCF__VW, w, W[(size_t)k * N + n0 + j]); \
                NCF__VFMA(a[0][j], w, x[0]); \
                NCF__VFMA(a[1][j], w, x[1]); \
                NCF__VFMA(a[2][j], w, x[2]); \
            } \
        } \
        NCF__UNROLL \
        for (b = 0; b < 3; b++) { \
            NCF__UNROLL \
            for (j = 0; j < NO; j++) { \
                a[b][j] = (ncf__vf)(~(a[b][j] < z) & (ncf__vi)a[b][j]); \
                NCF__VSTORE(Y + b * ys + (size_t)(n0 + j) * NCF__VW, a[b][j]); \
            } \
        } \
    }
NCF__LANES3_OUT(ncf__lanes3_out4, 4)
NCF__LANES3_OUT(ncf__lanes3_out1, 1)

/* The first layer's values for three blocks of the projection (at a stride of xs floats),
   [3][K][NCF__VW]: P[k] + X[k] clamped, as the row path clamps them. Made once and stored:
   made as read (NCF__LANES_OUT's FIRST) they would need registers that 4 outputs of 3 blocks
   use. next: the following three blocks, or NULL: a catalogue is read as one stream. */
static void ncf__lanes3_first(const float *X, size_t xs, const float *P, int K, const float *next,
                              float *NCF__RESTRICT Y)
{
    ncf__vf v, p, z = {0};
    size_t ys = (size_t)K * NCF__VW;
    int b, k;
    for (k = 0; k < K; k++, X += NCF__VW, Y += NCF__VW) {
        NCF__SPLAT(ncf__vf, NCF__VW, p, P[k]);
        NCF__UNROLL
        for (b = 0; b < 3; b++) {
            NCF__VLOAD(v, X + b * xs);
            if (next) NCF__PREFETCH(next + b * xs + (size_t)k * NCF__VW);
            v = p + v;
            v = (ncf__vf)((v > z) & (ncf__vi)v);
            NCF__VSTORE(Y + b * ys, v);
        }
    }
}

/* A dense layer for three blocks (NCF__LANES3_OUT). */
static void ncf__lanes3_layer(const float *X, size_t xs, int K, const float *W, const float *bias, int N, float *Y)
{
    int n0 = 0;
    for (; n0 + 4 <= N; n0 += 4) ncf__lanes3_out4(X, xs, K, W, bias, N, n0, Y, (size_t)N * NCF__VW);
    for (; n0 < N; n0++) ncf__lanes3_out1(X, xs, K, W, bias, N, n0, Y, (size_t)N * NCF__VW);
}
#endif

/* A dense layer for a block: 16 outputs at a time with AVX-512's 32 registers, else 8. With P,
   the second layer, its inputs made from the first's halves (NCF__LANES_OUT). */
static void ncf__lanes_layer(const float *X, const float *P, int K, const float *W, const float *bias, int N, float *Y)
{
    int n0 = 0;
    for (; NCF__VW == 16 && n0 + 16 <= N; n0 += 16)
        (P ? ncf__lanes_first16 : ncf__lanes_out16)(X, P, K, W, bias, N, n0, Y);
    for (; n0 + 8 <= N; n0 += 8) (P ? ncf__lanes_first8 : ncf__lanes_out8)(X, P, K, W, bias, N, n0, Y);
    for (; n0 < N; n0++) (P ? ncf__lanes_first1 : ncf__lanes_out1)(X, P, K, W, bias, N, n0, Y);
}

/* v = row d of the projection for the lanes' items it: one load for a whole block (at blk). */
#define NCF__LANES_ROW(v, d) \
    do { \
        int l_; \
        float g_[NCF__PB]; /* (lanes by index would keep v in memory) */ \
        if (blk) NCF__VLOAD(v, blk + (size_t)(d)*NCF__PB); \
        else { \
            for (l_ = 0; l_ < NCF__PB; l_++) g_[l_] = proj[ncf__proj_at(R, (size_t)it[l_], (size_t)(d))]; \
            NCF__VLOAD(v, g_); \
        } \
    } while (0)

/* The output layer's terms for a block, as ncf__output_sum takes them: GMF term d (rows L1 + d
   of the projection), then MLP term t (row t of x), to partial sum d or t % NCF__LANES in
   order, then the partial sums pairwise into p[0]. Whole groups of NCF__LANES index p by
   constants, which keeps it in registers; the tails of sizes that are not whole groups go
   through a copy in memory. */
static void ncf__lanes_terms(ncf__vf *p, const float *proj, int R, const int32_t *it, const float *blk, int L1,
                             const float *gw, const float *gu, int F, const float *x, const float *wh, int top)
{
    ncf__vf q[NCF__LANES], g, u, w;
    int d = 0, t = 0, j;
    for (; d + NCF__LANES <= F; d += NCF__LANES) {
        NCF__UNROLL
        for (j = 0; j < NCF__LANES; j++) {
            NCF__LANES_ROW(g, L1 + d + j);
            NCF__SPLAT(ncf__vf, NCF__VW, u, gu[d + j]);
            NCF__SPLAT(ncf__vf, NCF__VW, w, gw[d + j]);
            g = u * g;
            NCF__VFMA(p[j], w, g);
        }
    }
    for (; d == F && t + NCF__LANES <= top; t += NCF__LANES) {
        NCF__UNROLL
        for (j = 0; j < NCF__LANES; j++) {
            NCF__VLOAD(g, x + (size_t)(t + j) * NCF__VW);
            NCF__SPLAT(ncf__vf, NCF__VW, w, wh[t + j]);
            NCF__VFMA(p[j], w, g);
        }
    }
    if (d < F || t < top) {
        memcpy(q, p, sizeof q);
        for (; d < F; d++) {
            NCF__LANES_ROW(g, L1 + d);
            NCF__SPLAT(ncf__vf, NCF__VW, u, gu[d]);
            NCF__SPLAT(ncf__vf, NCF__VW, w, gw[d]);
            g = u * g;
            NCF__VFMA(q[d % NCF__LANES], w, g);
        }
        for (; t < top; t++) {
            NCF__VLOAD(g, x + (size_t)t * NCF__VW);
            NCF__SPLAT(ncf__vf, NCF__VW, w, wh[t]);
            NCF__VFMA(q[t % NCF__LANES], w, g);
        }
        memcpy(p, q, sizeof q);
    }
    NCF__UNROLL
    for (j = 0; j < 4; j++) p[j] += p[j + 4];
    p[0] += p[2], p[1] += p[3];
    p[0] += p[1];
}

/* Logits of one user against n <= NCF__PB items (cand[0..n), or first.. when cand is NULL)
   into sc, a vector lane each: the same sums in the same order as the row path
   (ncf__score_user, ncf__output_sum), so the same bits, with every layer's work on whole
   vectors however narrow the layer. The lanes past n repeat the last item. */
static void ncf__score_lanes(const ncf_model *m, const float *proj, const float *gu, const int32_t *cand, int first,
                             int n, ncf__eval_buf *e, float *sc)
{
    const struct ncf__scratch *s = m->scratch;
    const int *L = m->cfg.layers;
    const float *gw = s->tables.gmf_weights, *wh = m->w_out ? m->w_out + s->F : NULL, *x, *pu = e->pu, *blk = NULL;
    float *h0 = e->h[0];
    int32_t it[NCF__PB];
    int j, d, l, cur = 0, L1 = L[1], R = ncf__proj_rows(m);
    ncf__vf v, p[NCF__LANES], z = {0}, c;
    for (j = 0; j < NCF__PB; j++) it[j] = cand ? cand[j < n ? j : n - 1] : first + (j < n ? j : n - 1);
    if (!cand && n == NCF__PB && first % NCF__PB == 0) blk = proj + ncf__proj_at(R, (size_t)first, 0);
    if (blk && s->nd >= 2) /* the first two layers at once (a whole block reads its projection in place) */
        l = 3, cur = 1, ncf__lanes_layer(blk, pu, L1, m->w[2], m->b[2], L[2], e->h[1]);
    else
        for (l = 2, d = 0; d < L1; d++) { /* the first layer: the user's half (with the bias) plus the item's */
            NCF__LANES_ROW(v, d);
            NCF__SPLAT(ncf__vf, NCF__VW, c, pu[d]);
            v = c + v;
            v = (ncf__vf)((v > z) & (ncf__vi)v); /* (v > 0 ? v : 0, as the row path) */
            NCF__VSTORE(h0 + (size_t)d * NCF__VW, v);
        }
    for (; l <= s->nd; l++, cur ^= 1)
        ncf__lanes_layer(e->h[cur], NULL, L[l - 1], m->w[l], m->b[l], L[l], e->h[cur ^ 1]);
    x = e->h[cur];
    NCF__UNROLL
    for (j = 0; j < NCF__LANES; j++) p[j] = z;
    ncf__lanes_terms(p, proj, R, it, blk, L1, gw, gu, s->F, x, wh, s->top);
    NCF__SPLAT(ncf__vf, NCF__VW, v, m->b_out[0]); /* (no biases: MF's, which has no projection) */
    v += p[0];
    if (n == NCF__PB) NCF__VSTORE(sc, v);
    else {
        float t[NCF__PB];
        NCF__VSTORE(t, v);
        memcpy(sc, t, sizeof(float) * (size_t)n);
    }
}
#endif

#if NCF__VW == 8
/* ncf__lanes_terms' p[0] for three blocks at once (at a stride of bs floats, their last layer's
   values at xs) where F and top are whole groups of NCF__LANES: each block's partial sum j
   takes its terms in the same order, each weight splat once for the three blocks, and partial
   sums j and j + 4 are made together and added as ncf__lanes_terms adds them. */
static void ncf__lanes3_terms(ncf__vf *v, const float *blk, size_t bs, int L1, const float *gw, const float *gu, int F,
                              const float *x, size_t xs, const float *wh, int top)
{
    ncf__vf q[3][4], a[3], c[3], g, u, w, z = {0};
    int b, j, d, t;
    for (j = 0; j < 4; j++) {
        NCF__UNROLL
        for (b = 0; b < 3; b++) a[b] = z, c[b] = z;
        for (d = 0; d < F; d += NCF__LANES) {
            NCF__SPLAT(ncf__vf, NCF__VW, u, gu[d + j]);
            NCF__SPLAT(ncf__vf, NCF__VW, w, gw[d + j]);
            NCF__UNROLL
            for (b = 0; b < 3; b++) {
                NCF__VLOAD(g, blk + b * bs + (size_t)(L1 + d + j) * NCF__PB);
                g = u * g;
                NCF__VFMA(a[b], w, g);
            }
            NCF__SPLAT(ncf__vf, NCF__VW, u, gu[d + j + 4]);
            NCF__SPLAT(ncf__vf, NCF__VW, w, gw[d + j + 4]);
            NCF__UNROLL
            for (b = 0; b < 3; b++) {
                NCF__VLOAD(g, blk + b * bs + (size_t)(L1 + d + j + 4) * NCF__PB);
                g = u * g;
                NCF__VFMA(c[b], w, g);
            }
        }
        for (t = 0; t < top; t += NCF__LANES) {
            NCF__SPLAT(ncf__vf, NCF__VW, w, wh[t + j]);
            NCF__UNROLL
            for (b = 0; b < 3; b++) {
                NCF__VLOAD(g, x + b * xs + (size_t)(t + j) * NCF__VW);
                NCF__VFMA(a[b], w, g);
            }
            NCF__SPLAT(ncf__vf, NCF__VW, w, wh[t + j + 4]);
            NCF__UNROLL
            for (b = 0; b < 3; b++) {
                NCF__VLOAD(g, x + b * xs + (size_t)(t + j + 4) * NCF__VW);
                NCF__VFMA(c[b], w, g);
            }
        }
        NCF__UNROLL
        for (b = 0; b < 3; b++) q[b][j] = a[b] + c[b];
    }
    NCF__UNROLL
    for (b = 0; b < 3; b++) {
        q[b][0] += q[b][2], q[b][1] += q[b][3];
        v[b] = q[b][0] + q[b][1];
    }
}

/* ncf__score_lanes of three whole blocks of the catalogue at once (items first.., first a
   multiple of NCF__PB; at least two dense layers), the same bits; next as ncf__lanes3_first. */
static void ncf__score_lanes3(const ncf_model *m, const float *proj, const float *gu, int first, const float *next,
                              ncf__eval_buf *e, float *sc)
{
    const struct ncf__scratch *s = m->scratch;
    const int *L = m->cfg.layers;
    const float *gw = s->tables.gmf_weights, *wh = m->w_out ? m->w_out + s->F : NULL;
    int b, j, l, cur = 0, R = ncf__proj_rows(m);
    const float *blk = proj + ncf__proj_at(R, (size_t)first, 0);
    ncf__vf p[NCF__LANES], v, t[3], z = {0};
    ncf__lanes3_first(blk, (size_t)R * NCF__PB, e->pu, L[1], next, e->h[1]);
    ncf__lanes3_layer(e->h[1], (size_t)L[1] * NCF__VW, L[1], m->w[2], m->b[2], L[2], e->h[0]);
    for (l = 3; l <= s->nd; l++, cur ^= 1)
        ncf__lanes3_layer(e->h[cur], (size_t)L[l - 1] * NCF__VW, L[l - 1], m->w[l], m->b[l], L[l], e->h[cur ^ 1]);
    if (s->F % NCF__LANES == 0 && s->top % NCF__LANES == 0)
        ncf__lanes3_terms(t, blk, (size_t)R * NCF__PB, L[1], gw, gu, s->F, e->h[cur], (size_t)s->top * NCF__VW, wh,
                          s->top);
    else
        for (b = 0; b < 3; b++) {
            NCF__UNROLL
            for (j = 0; j < NCF__LANES; j++) p[j] = z;
            ncf__lanes_terms(p, proj, R, NULL, blk + (size_t)b * R * NCF__PB, L[1], gw, gu, s->F,
                             e->h[cur] + (size_t)b * s->top * NCF__VW, wh, s->top);
            t[b] = p[0];
        }
    for (b = 0; b < 3; b++) {
        NCF__SPLAT(ncf__vf, NCF__VW, v, m->b_out[0]);
        v += t[b];
        NCF__VSTORE(sc + b * NCF__PB, v);
    }
}
#endif

/* Logits of user u (or of the user rows urow, [F][H][bias], when given: a user folded in)
   against items cand[0..n) (items first.. in order when cand is NULL) into e->sc, with the
   training forward's rounding (ncf__first_layer, ncf__outfile). Without a projection the items'
   half of the first layer is computed here, row by row as the cache computes it, so the scores
   are the same. e holds at least n items. same_user: the last call on e scored this user, so
   e->pu holds its half of the first layer already (a catalogue is scored a chunk at a time). */
static void ncf__score_user(const ncf_model *m, const float *proj, int u, const float *urow, const int32_t *cand,
                            int first, int n, ncf__eval_buf *e, int same_user)
{
    const struct ncf__scratch *s = m->scratch;
    const int *L = m->cfg.layers;
    int ur = u - NCF__USER0(s); /* (a model shard's row of user u) */
    const float *gu = !s->F ? NULL : urow ? urow : ncf__emb_row(&s->tables.tab[s->tables.gmf], 0, ur, e->urow);
    float ub = urow ? urow[s->F + s->H] : m->user_bias ? m->user_bias[ur] : 0.0f;
    int j, d, l, cur = 0;
    if (s->H) {
        int L1 = L[1], H = s->H;
        const float *hu = urow ? urow + s->F : ncf__emb_row(&s->tables.tab[s->tables.mlp], 0, ur, e->urow + s->F);
        if (!same_user) ncf__gemm_rows(e->pu, L1, hu, 0, 1, m->w[1], L1, m->b[1], 0, 1, L1, H, 0);
#if NCF__PB > 1
        if (proj && (!cand || !ncf__proj_row_major(m, proj)) && (!s->F || s->tables.tab[s->tables.gmf].item)) {
            for (j = 0; j < n;) { /* (a list of candidates reads the rows, when there are any) */
#if NCF__VW == 8
                if (!cand && n - j >= 3 * NCF__PB && (first + j) % NCF__PB == 0 && s->nd >= 2) {
                    size_t next = ncf__proj_at(ncf__proj_rows(m), (size_t)(first + j + 3 * NCF__PB), 0);
                    ncf__score_lanes3(m, proj, gu, first + j, n - j >= 6 * NCF__PB ? proj + next : NULL, e, e->sc + j);
                    j += 3 * NCF__PB;
                    continue;
                }
#endif
                ncf__score_lanes(m, proj, gu, cand ? cand + j : NULL, first + j, n - j < NCF__PB ? n - j : NCF__PB, e,
                                 e->sc + j);
                j += NCF__PB;
            }
            return;
        }
#endif
        proj = ncf__proj_row_major(m, proj);
        if (!proj) { /* the items' rows gathered, then their half of the first layer */
            for (j = 0; j < n; j++) {
                float *dst = e->irow + (size_t)j * H;
                const float *r = ncf__emb_row(&s->tables.tab[s->tables.mlp], 1, cand ? cand[j] : first + j, dst);
                if (r != dst) memcpy(dst, r, sizeof(float) * (size_t)H);
            }
            ncf__gemm_rows(e->h[1], L1, e->irow, H, 1, m->w[1] + (size_t)H * L1, L1, NULL, 0, n, L1, H, 0);
        }
        for (j = 0; j < n; j++) {
            const float *pi = proj ? proj + (size_t)(cand ? cand[j] : first + j) * L1 : e->h[1] + (size_t)j * L1;
            float *h = e->h[0] + (size_t)j * L1;
            for (d = 0; d < L1; d++) {
                float v = e->pu[d] + pi[d];
                h[d] = v > 0.0f ? v : 0.0f;
            }
        }
        for (l = 2; l <= s->nd; l++, cur ^= 1)
            ncf__gemm_rows(e->h[cur ^ 1], L[l], e->h[cur], L[l - 1], 1, m->w[l], L[l], m->b[l], 0, n, L[l], L[l - 1],
                           NCF__RELU);
    }
    ncf__output_items(m, gu, ub, cand, first, n, e->h[cur], e);
}

/* ---- >>train (src/train.c) ------------------------------------------------------------------- */
#ifndef NCF_INFERENCE_ONLY /* the whole stage: a device only serves */
/* ---- >>training-step: loss, backward pass and gradient sums of a step ------------------------ */
/* A training step runs as three phases in one parallel region (four with dense Adam):
   1. rows: each tile of batch rows sampled, forward, loss terms and every gradient that
      stays within its row (down to the gathered embeddings);
   2. sums over the batch: the dense layers' weight and bias gradients, the batch grouped by
      user and by item, the loss;
   3. rows of the tables: each embedding row's gradient summed over its batch positions and
      the row updated (lazy Adam, SGD); the dense parameters updated;
   4. dense Adam only: every embedding row updated.
   ncf_train_epoch keeps one region for up to NCF__BLOCK steps. */

static double ncf__sqnorm(const float *v, size_t n)
{
    double a = 0;
    size_t i;
    for (i = 0; i < n; i++) a += (double)v[i] * v[i];
    return a;
}

/* Per-example loss of rows [r0, r1): cross-entropy plus the L2 terms of its embedding rows. */
static void ncf__loss_rows(ncf_model *m, const int32_t *users, const int32_t *items, const float *labels, int r0,
                           int r1)
{
    struct ncf__scratch *s = m->scratch;
    const ncf_config *c = &m->cfg;
    int b;
    for (b = r0; b < r1; b++) {
        double r = ncf__bce(s->batch.act.logit[b], labels[b]);
        if (s->F && c->mf_reg > 0)
            r += c->mf_reg *
                (ncf__sqnorm(m->gmf_user + (size_t)users[b] * s->F, s->F) +
                 ncf__sqnorm(m->gmf_item + (size_t)items[b] * s->F, s->F));
        if (m->user_bias && c->mf_reg > 0)
            r += c->mf_reg *
                ((double)m->user_bias[users[b]] * m->user_bias[users[b]] +
                 (double)m->item_bias[items[b]] * m->item_bias[items[b]]);
        if (s->H && c->mlp_reg[0] > 0)
            r += c->mlp_reg[0] *
                (ncf__sqnorm(m->mlp_user + (size_t)users[b] * s->H, s->H) +
                 ncf__sqnorm(m->mlp_item + (size_t)items[b] * s->H, s->H));
        s->batch.ex_loss[b] = r;
    }
}

/* sum plus the dense layers' L2 terms of the loss, added in layer order. */
static double ncf__plus_dense_l2(const ncf_model *m, double sum)
{
    int l;
    for (l = 1; l <= m->scratch->nd; l++)
        if (m->cfg.mlp_reg[l] > 0)
            sum += m->cfg.mlp_reg[l] * ncf__sqnorm(m->w[l], (size_t)m->cfg.layers[l - 1] * m->cfg.layers[l]);
    return sum;
}

/* The mean of the per-example losses, summed in order, plus the dense layers' L2 terms. */
static double ncf__loss_total(const ncf_model *m, int n)
{
    const struct ncf__scratch *s = m->scratch;
    double sum = 0;
    int b;
    for (b = 0; b < n; b++) sum += s->batch.ex_loss[b];
    return ncf__plus_dense_l2(m, sum / n);
}

/* A training batch: given, or sampled in phase 1 (smp set) from examples start.. of epoch. */
typedef struct {
    int32_t *users, *items;
    float *labels;
    int n;
    const ncf_sampler *smp;
    int epoch;
    int64_t start;
} ncf__batch;

static void ncf__sample_rows(const ncf__batch *bt, int r0, int r1)
{
    ncf__fill_rows(bt->smp, bt->epoch, bt->start + r0, r1 - r0, bt->users + r0, bt->items + r0, bt->labels + r0, NULL);
}

/* Prefetches of row r of every table on one side (0 users, 1 items): its moments, and with
   with_params its parameters too. A macro: GCC takes a function of prefetches alone for one
   without effects and drops its calls. */
#define NCF__PREFETCH_ROW(m, side, r, with_params) \
    do { \
        const struct ncf__scratch *s_ = (m)->scratch; \
        int t_, d_; \
        for (t_ = 0; t_ < s_->tables.n; t_++) { \
            int D_ = s_->tables.tab[t_].D; \
            size_t o_ = \
                (size_t)(((side) ? s_->tables.tab[t_].item : s_->tables.tab[t_].user) - (m)->params) + (size_t)(r)*D_; \
            for (d_ = 0; d_ < D_; d_ += 16) { \
                if (with_params) NCF__PREFETCH((m)->params + o_ + d_); \
                if ((m)->adam_m) NCF__PREFETCH((m)->adam_m + o_ + d_), NCF__PREFETCH((m)->adam_v + o_ + d_); \
            } \
        } \
    } while (0)

#define NCF__EARLY_BYTES 262144 /* a batch's moments prefetched early fit in this (half an L2) */

/* Whether the backward pass prefetches the moments of the batch's rows: with lazy Adam, where
   they all fit in a core's L2 until the update reads them (the paper config's 160 KB, not the
   MLPerf config's tens of MB). */
static int ncf__moments_early(const ncf_model *m, int n)
{
    const struct ncf__scratch *s = m->scratch;
    size_t row = 0;
    int t;
    if (!m->adam_m || m->cfg.optimizer != NCF_OPT_ADAM || m->cfg.adam != NCF_ADAM_LAZY) return 0;
    for (t = 0; t < s->tables.n; t++) row += (size_t)s->tables.tab[t].D;
    return (size_t)n * row * 4 * sizeof(float) <= NCF__EARLY_BYTES; /* m and v, a user's and an item's */
}

static float *ncf__grad_of(ncf_model *m, const float *param) { return m->grads + (param - m->params); }

/* The gradients that stay within rows [r0, r1): dz = d(loss)/d(logit), the GMF rows' (dgu,
   dgi), and dy[l] = d(loss)/d(output of layer l) through its ReLU, down to dy[0] for the
   gathered [user; item] MLP rows. The weight gradients are sums over rows: phase 2. */
static void ncf__backward_rows(ncf_model *m, const ncf__batch *bt, int r0, int r1)
{
    struct ncf__scratch *s = m->scratch;
    const int *L = m->cfg.layers;
    const int32_t *users = bt->users, *items = bt->items;
    int F = s->F, b, k, l, early = ncf__moments_early(m, bt->n);
    float inv_n = 1.0f / (float)bt->n;
    for (b = r0; b < r1; b++) {
        float y = bt->labels[b], p = ncf__sigmoid(s->batch.act.logit[b]);
        float dz = (y > 0 ? y * (p - 1.0f) : p) * inv_n; /* (y 1: p - 1, as unweighted) */
        s->batch.dz[b] = dz;
        if (early) {
            NCF__PREFETCH_ROW(m, 0, users[b], 0);
            NCF__PREFETCH_ROW(m, 1, items[b], 0);
        }
        if (F) { /* d/d(user row) = dgmf * item row, and vice versa */
            const float *gu = m->gmf_user + (size_t)users[b] * F, *gi = m->gmf_item + (size_t)items[b] * F;
            for (k = 0; k < F; k++) {
                float dg = dz * s->tables.gmf_weights[k];
                s->batch.dgu[(size_t)b * F + k] = dg * gi[k];
                s->batch.dgi[(size_t)b * F + k] = dg * gu[k];
            }
        }
        if (s->top) {
            const float *h = s->batch.act.x[s->nd] + (size_t)b * s->top;
            float *g = s->batch.dy[s->nd] + (size_t)b * s->top;
            for (k = 0; k < s->top; k++) g[k] = h[k] > 0.0f ? dz * m->w_out[F + k] : 0.0f;
        }
    }
    for (l = s->nd; l >= 1; l--) { /* dy[l-1] = dy[l] W^T, through layer l-1's ReLU */
        int in = L[l - 1], out = L[l];
        ncf__gemm_rows(s->batch.dy[l - 1], in, s->batch.dy[l], out, 1, s->batch.wt[l], in, NULL, r0, r1, in, out, 0);
        if (l > 1)
            for (b = r0; b < r1; b++) {
                const float *h = s->batch.act.x[l - 1] + (size_t)b * in;
                float *g = s->batch.dy[l - 1] + (size_t)b * in;
                for (k = 0; k < in; k++) g[k] = h[k] > 0.0f ? g[k] : 0.0f;
            }
    }
}

#define NCF__SPAN_BYTES 262144 /* phase 1's rows in flight keep their activations within this */

/* The rows phase 1 takes forward and then backward at a time: whole tiles whose activations
   and gradients come to about NCF__SPAN_BYTES (one tile at least), so the backward pass still
   finds them in a core's L2, while every layer's kernel, read once a span forward and once
   back, serves enough rows to pay for the trip from a farther cache. (The MLPerf config's
   kernels take 832 KB; at 64 KB a span was one tile of 6 rows (AVX2), and 36 rows trained
   1.14-1.16x as fast.) A claim early in a phase can span hundreds of rows. */
static int ncf__span_rows(const ncf_model *m)
{
    const struct ncf__scratch *s = m->scratch;
    int l, floats = 3 * s->F + 4, tiles; /* a row's GMF product and its two gradients, and scalars */
    for (l = 0; l <= s->nd && s->H; l++) floats += 2 * m->cfg.layers[l]; /* x[l] and dy[l] */
    tiles = NCF__SPAN_BYTES / (4 * floats * NCF__MR);
    return (tiles < 1 ? 1 : tiles) * NCF__MR;
}

/* Phase 1 for rows [a, b) of the batch (see above); the backward part when `backward`. */
static void ncf__rows_range(ncf__ctx *x, ncf_model *m, const ncf__batch *bt, int a, int b, int backward)
{
    int64_t lo, hi;
    int64_t grain = ncf__tile_grain(ncf__row_macs(m) * (backward ? 2 : 1));
    int span = ncf__span_rows(m);
    while (ncf__claim(x, NCF__TILES(b - a), grain, &lo, &hi)) {
        int r0 = a + (int)lo * NCF__MR, r1 = a + hi * NCF__MR < b ? a + (int)hi * NCF__MR : b, t0, t1;
        if (bt->smp) ncf__sample_rows(bt, r0, r1);
        for (t0 = r0; t0 < r1; t0 = t1) {
            t1 = t0 + span < r1 ? t0 + span : r1;
            ncf__forward_rows(m, &m->scratch->batch.act, bt->users, bt->items, t0, t1);
            ncf__loss_rows(m, bt->users, bt->items, bt->labels, t0, t1);
            if (backward) ncf__backward_rows(m, bt, t0, t1);
        }
    }
}

static void ncf__rows_phase(ncf__ctx *x, ncf_model *m, const ncf__batch *bt, int backward)
{
    ncf__rows_range(x, m, bt, 0, bt->n, backward);
}

/* Groups batch positions by row: key = row << 32 | position, sorted; start[q] is
   where the q-th distinct row begins. Returns the number of distinct rows. An LSD
   radix sort on the row, 8 bits a pass: stable, so positions stay ascending. */
static int ncf__sort_batch_by_row(uint64_t *key, uint64_t *tmp, int *start, const int32_t *rows, int n)
{
    int b, q = 0;
    for (b = 0; b < n; b++) key[b] = (uint64_t)(uint32_t)rows[b] << 32 | (uint32_t)b;
    ncf__radix_sort(key, tmp, (size_t)n, 32);
    for (b = 0; b < n; b++)
        if (b == 0 || (key[b] >> 32) != (key[b - 1] >> 32)) start[q++] = b;
    start[q] = n;
    return q;
}

#define NCF__COLS 64 /* columns a block: a row adds to several vectors of sums at once */

/* acc[j] += sum over rows b (ascending) of w[b] * X[b][j] (w NULL: 1) for the block of
   columns j0 <= j < min(j0 + NCF__COLS, cols). */
static void ncf__col_block(float *acc, const float *w, const float *X, int ld, int n, int j0, int cols)
{
    int nc = cols - j0 < NCF__COLS ? cols - j0 : NCF__COLS, b, j;
    float g[NCF__COLS] = {0};
    for (b = 0; b < n; b++) {
        const float *xb = X + (size_t)b * ld + j0;
        float wb = w ? w[b] : 1.0f;
        for (j = 0; j < nc; j++) g[j] += wb * xb[j];
    }
    for (j = 0; j < nc; j++) acc[j0 + j] += g[j];
}

#define NCF__BLOCKS(cols) NCF__CEIL_DIV((int64_t)(cols), NCF__COLS)

/* Row tiles of a layer's dW per unit: a unit reads all of the batch's dy once, so the fewer
   units the less it is read again, while four a layer keep two threads busy. The last unit
   also takes the rows that do not fill a unit, so that they end a range of whole tiles
   (ncf__gemm_block). */
static int ncf__dw_tiles(int in)
{
    int t = (int)(NCF__TILES(in) / 4);
    return t < 1 ? 1 : t > 8 ? 8 : t;
}
static int ncf__dw_units(int in)
{
    int u = in / (ncf__dw_tiles(in) * NCF__MR);
    return u > 1 ? u : 1;
}

/* Dense-gradient unit u of phase 2, summing batch rows [k0, k1) in order into g (the dense
   parameters' gradients, laid out as the parameters from emb_params on): each dense layer's
   dW, some row tiles a unit (dW += x^T dy, plus its L2 term when l2), and its bias column
   blocks; then the output layer's column blocks and its bias. */
static void ncf__layer_grads_of(ncf_model *m, int k0, int k1, int64_t u, float *g, int l2)
{
    struct ncf__scratch *s = m->scratch;
    const int *L = m->cfg.layers;
    int n = k1 - k0, l, F = s->F;
#define NCF__G(param) (g + ((param)-m->params - s->emb_params))
    for (l = 1; l <= s->nd; l++) {
        int in = L[l - 1], out = L[l];
        float *gw = NCF__G(m->w[l]);
        if (u < ncf__dw_units(in)) {
            int rows = ncf__dw_tiles(in) * NCF__MR, m0 = (int)u * rows, m1 = u + 1 < ncf__dw_units(in) ? m0 + rows : in;
            ncf__gemm_rows(gw, out, s->batch.act.x[l - 1] + (size_t)k0 * in, 1, in, s->batch.dy[l] + (size_t)k0 * out,
                           out, NULL, m0, m1, out, n, NCF__ACC);
            if (l2 && m->cfg.mlp_reg[l] > 0) {
                float two_r = 2.0f * m->cfg.mlp_reg[l];
                size_t k;
                for (k = (size_t)m0 * out; k < (size_t)m1 * out; k++) gw[k] += two_r * m->w[l][k];
            }
            return;
        }
        u -= ncf__dw_units(in);
        if (u < NCF__BLOCKS(out)) {
            ncf__col_block(NCF__G(m->b[l]), NULL, s->batch.dy[l] + (size_t)k0 * out, out, n, (int)u * NCF__COLS, out);
            return;
        }
        u -= NCF__BLOCKS(out);
    }
    if (m->w_out) {
        if (u < NCF__BLOCKS(F)) {
            ncf__col_block(NCF__G(m->w_out), s->batch.dz + k0, s->batch.act.gmf + (size_t)k0 * F, F, n,
                           (int)u * NCF__COLS, F);
            return;
        }
        u -= NCF__BLOCKS(F);
        if (u < NCF__BLOCKS(s->top)) {
            ncf__col_block(NCF__G(m->w_out) + F, s->batch.dz + k0, s->batch.act.x[s->nd] + (size_t)k0 * s->top, s->top,
                           n, (int)u * NCF__COLS, s->top);
            return;
        }
    }
    ncf__col_block(NCF__G(m->b_out), NULL, s->batch.dz + k0, 1, n, 0, 1);
#undef NCF__G
}

/* The units of ncf__layer_grads_of. */
static int64_t ncf__layer_grads_count(const ncf_model *m)
{
    const struct ncf__scratch *s = m->scratch;
    int64_t units = 1;
    int l;
    for (l = 1; l <= s->nd; l++) units += ncf__dw_units(m->cfg.layers[l - 1]) + NCF__BLOCKS(m->cfg.layers[l]);
    if (m->w_out) units += NCF__BLOCKS(s->F) + NCF__BLOCKS(s->top);
    return units;
}

/* Phase 2, unit u: 0 groups the batch by user, 1 by item, 2 sums the loss into *loss; then the
   dense gradients over the whole batch. Every sum runs over the batch in order. */
static void ncf__sums_unit(ncf_model *m, const ncf__batch *bt, int64_t u, double *loss)
{
    struct ncf__scratch *s = m->scratch;
    int n = bt->n;
    if (u == 0) {
        s->batch.nuser = ncf__sort_batch_by_row(s->batch.ukey, s->batch.sortbuf, s->batch.ustart, bt->users, n);
        return;
    }
    if (u == 1) {
        s->batch.nitem = ncf__sort_batch_by_row(s->batch.ikey, s->batch.sortbuf + n, s->batch.istart, bt->items, n);
        return;
    }
    if (u == 2) {
        *loss = ncf__loss_total(m, n);
        return;
    }
    ncf__layer_grads_of(m, 0, n, u - 3, m->grads + s->emb_params, 1);
}

static void ncf__sums_phase(ncf__ctx *x, ncf_model *m, const ncf__batch *bt, double *loss)
{
    int64_t units = 3 + ncf__layer_grads_count(m), lo, hi, u;
    while (ncf__claim(x, units, 1, &lo, &hi))
        for (u = lo; u < hi; u++) ncf__sums_unit(m, bt, u, loss);
}

/* ---- >>optimizer: Adam (lazy, dense) and SGD updates ----------------------------------------- */

typedef struct {
    float b1, b2, lr_t, eps;
} ncf__adam_k;

/* The constants of optimizer step t (1, 2, ...). */
static ncf__adam_k ncf__adam_consts(const ncf_model *m, int64_t t)
{
    const ncf_config *c = &m->cfg;
    ncf__adam_k k;
    k.b1 = c->beta1, k.b2 = c->beta2, k.eps = c->epsilon;
    k.lr_t = c->optimizer == NCF_OPT_SGD
        ? c->lr
        : (float)(c->lr * sqrt(1.0 - pow(c->beta2, (double)t)) / (1.0 - pow(c->beta1, (double)t)));
    return k;
}

/* The updates return nonzero when a parameter they wrote is no longer finite: the check
   rides along in loops that are bound by memory, so it costs next to nothing. They clear
   the gradients they used. */

/* TF's Adam: the bias corrections folded into the step size (epsilon-hat form), on n
   parameters p with their moments mm, vv and gradient g. */
static int ncf__adam_step(float *NCF__RESTRICT p, float *NCF__RESTRICT mm, float *NCF__RESTRICT vv,
                          float *NCF__RESTRICT g, size_t n, const ncf__adam_k *k)
{
    size_t i;
    int bad = 0;
    for (i = 0; i < n; i++) {
        mm[i] = k->b1 * mm[i] + (1.0f - k->b1) * g[i];
        vv[i] = k->b2 * vv[i] + (1.0f - k->b2) * g[i] * g[i];
        p[i] -= k->lr_t * mm[i] / (sqrtf(vv[i]) + k->eps);
        g[i] = 0.0f;
        bad |= NCF__NONFINITE(p[i]);
    }
    return bad;
}

/* Plain SGD, the same way. */
static int ncf__sgd_step(float *NCF__RESTRICT p, float *NCF__RESTRICT g, size_t n, const ncf__adam_k *k)
{
    size_t i;
    int bad = 0;
    for (i = 0; i < n; i++) {
        p[i] -= k->lr_t * g[i];
        g[i] = 0.0f;
        bad |= NCF__NONFINITE(p[i]);
    }
    return bad;
}

/* The model's params [off, off + n) stepped by gradient g (m->grads + off, or a row summed
   elsewhere). */
static int ncf__adam_update(ncf_model *m, size_t off, size_t n, float *NCF__RESTRICT g, const ncf__adam_k *k)
{
    return ncf__adam_step(m->params + off, m->adam_m + off, m->adam_v + off, g, n, k);
}

static int ncf__sgd_update(ncf_model *m, size_t off, size_t n, float *NCF__RESTRICT g, const ncf__adam_k *k)
{
    return ncf__sgd_step(m->params + off, g, n, k);
}

/* One optimizer on [off, off + n) with gradient g, chosen outside the loops that call it so
   each inlines. */
static int ncf__update_with(ncf_model *m, size_t off, size_t n, float *g, const ncf__adam_k *k)
{
    return m->cfg.optimizer == NCF_OPT_SGD ? ncf__sgd_update(m, off, n, g, k) : ncf__adam_update(m, off, n, g, k);
}

static int ncf__update_range(ncf_model *m, size_t off, size_t n, const ncf__adam_k *k)
{
    return ncf__update_with(m, off, n, m->grads + off, k);
}

/* Every embedding row has moments that decay each step (TF's dense Adam). */
static int ncf__dense_adam(const ncf_model *m)
{
    return m->cfg.optimizer != NCF_OPT_SGD && m->cfg.adam == NCF_ADAM_DENSE;
}

#define NCF__CHUNK 4096 /* parameters per unit of a flat update */

/* The transposed kernels' copies of parameters [a, e): the backward pass reads W^T. */
static void ncf__transpose_part(ncf_model *m, size_t a, size_t e)
{
    struct ncf__scratch *s = m->scratch;
    int l;
    for (l = 1; l <= s->nd; l++) {
        size_t off = (size_t)(m->w[l] - m->params), in = m->cfg.layers[l - 1], out = m->cfg.layers[l], i, end, r, c;
        if (e <= off) break; /* the tensors lie in order */
        i = a > off ? a - off : 0, end = e - off < in * out ? e - off : in * out;
        for (r = i / out, c = i % out; i < end; i++) { /* w[l][i] is row r, column c */
            s->batch.wt[l][c * in + r] = m->w[l][i];
            if (++c == out) c = 0, r++;
        }
    }
}

/* Dense-parameter unit u: updates [emb_params + u*CHUNK, ..) and refreshes their transposes. */
static int ncf__layer_update(ncf_model *m, int64_t u, const ncf__adam_k *k)
{
    size_t a = m->scratch->emb_params + (size_t)u * NCF__CHUNK, e = a + NCF__CHUNK;
    int bad;
    if (e > m->num_params) e = m->num_params;
    bad = ncf__update_range(m, a, e - a, k);
    ncf__transpose_part(m, a, e);
    return bad;
}

static int64_t ncf__layer_updates_count(const ncf_model *m)
{
    return (int64_t)NCF__CEIL_DIV(m->num_params - m->scratch->emb_params, NCF__CHUNK);
}

static int64_t ncf__table_updates_count(const ncf_model *m)
{
    return NCF__CEIL_DIV((int64_t)m->scratch->emb_params, NCF__CHUNK);
}

/* Embedding unit u of dense Adam: every row, in flat chunks. */
static int ncf__table_update(ncf_model *m, int64_t u, const ncf__adam_k *k)
{
    size_t a = (size_t)u * NCF__CHUNK, e = a + NCF__CHUNK;
    if (e > m->scratch->emb_params) e = m->scratch->emb_params;
    return ncf__update_range(m, a, e - a, k);
}

/* What the rows of table t on one side (0 users, 1 items) receive from each batch position,
   and the factor of their L2 term. */
static const float *ncf__row_source(const ncf_model *m, int t, int side, int *ld, float *coef, int n)
{
    const struct ncf__scratch *s = m->scratch;
    float inv_n = 1.0f / (float)n;
    const float *tab = s->tables.tab[t].user;
    if (tab == m->mlp_user) {
        *ld = 2 * s->H, *coef = 2.0f * m->cfg.mlp_reg[0] * inv_n;
        return s->batch.dy[0] + (side ? s->H : 0);
    }
    *coef = 2.0f * m->cfg.mf_reg * inv_n;
    if (tab == m->user_bias) return *ld = 1, s->batch.dz;
    *ld = s->F;
    return side ? s->batch.dgi : s->batch.dgu;
}

/* The lanes of the row steps that wrote a non-finite parameter, folded once for many rows. */
typedef struct {
    int any;
#if NCF__VEC
    ncf__vi lanes;
#if NCF__VW == 16
    ncf__vhi half;
#endif
#endif
} ncf__row_check;

/* One row's lanes [*d, ..) in steps of W, W floats a vector of type V (lane masks VI): each
   lane's gradient summed over the row's batch positions b0..b1 of src (key's low halves, rows
   ld apart) in order, plus c times the parameter, then stepped, all in registers. The same
   operations in the same order as the sum into a buffer and ncf__adam_step (ncf__sgd_step
   with sgd), so the same bits; without the buffer's store and reload. The lanes that wrote a
   non-finite parameter are set in bad->LANES, which the caller folds once for many rows. */
#define NCF__ROW_STEP(name, V, VI, W, SQRT, LANES) \
    static void name(float *NCF__RESTRICT p, float *NCF__RESTRICT mm, float *NCF__RESTRICT vv, int *d, int D, \
                     const float *src, int ld, const uint64_t *key, int b0, int b1, float c, const ncf__adam_k *k, \
                     int sgd, ncf__row_check *bad) \
    { \
        V z = {0}, cv, lr, b1v, b1c, b2v, b2c, eps; \
        int b; \
        NCF__SPLAT(V, W, cv, c); \
        NCF__SPLAT(V, W, lr, k->lr_t); \
        NCF__SPLAT(V, W, b1v, k->b1); \
        NCF__SPLAT(V, W, b1c, 1.0f - k->b1); \
        NCF__SPLAT(V, W, b2v, k->b2); \
        NCF__SPLAT(V, W, b2c, 1.0f - k->b2); \
        NCF__SPLAT(V, W, eps, k->eps); \
        for (; *d + (W) <= D; *d += (W)) { \
            V g = z, x, pv, mv, sv; \
            for (b = b0; b < b1; b++) { \
                memcpy(&x, src + (size_t)(key[b] & 0xffffffffu) * ld + *d, sizeof x); \
                g += x; \
            } \
            memcpy(&pv, p + *d, sizeof pv); \
            if (c != 0.0f) g += cv * pv; \
            if (sgd) pv -= lr * g; \
            else { \
                memcpy(&mv, mm + *d, sizeof mv); \
                memcpy(&sv, vv + *d, sizeof sv); \
                mv = b1v * mv + b1c * g; \
                sv = b2v * sv + b2c * g * g; \
                memcpy(mm + *d, &mv, sizeof mv); \
                memcpy(vv + *d, &sv, sizeof sv); \
                SQRT(sv); \
                pv -= lr * mv / (sv + eps); \
            } \
            memcpy(p + *d, &pv, sizeof pv); \
            bad->LANES |= (VI)(pv - pv != z); \
        } \
    }
#if NCF__VEC
NCF__ROW_STEP(ncf__row_lanes, ncf__vf, ncf__vi, NCF__VW, NCF__VSQRT, lanes)
#if NCF__VW == 16
NCF__ROW_STEP(ncf__row_half_lanes, ncf__vh, ncf__vhi, 8, NCF__HSQRT, half) /* rows of 8 (the paper's GMF) */
#endif
#endif

static int ncf__row_check_fold(const ncf__row_check *r)
{
    int any = r->any, l;
#if NCF__VEC
    for (l = 0; l < NCF__VW; l++) any |= r->lanes[l];
#if NCF__VW == 16
    for (l = 0; l < 8; l++) any |= r->half[l];
#endif
#endif
    (void)l;
    return any != 0;
}

/* A row's whole step from the batch (see NCF__ROW_STEP): vectors, then the lanes left one at
   a time through the plain step. */
static void ncf__row_step(ncf_model *m, float *p, int D, const float *src, int ld, const uint64_t *key, int b0, int b1,
                          float c, const ncf__adam_k *k, ncf__row_check *bad)
{
    size_t off = (size_t)(p - m->params);
    int d = 0, b, sgd = m->cfg.optimizer == NCF_OPT_SGD;
    float *mm = sgd ? NULL : m->adam_m + off, *vv = sgd ? NULL : m->adam_v + off; /* (SGD has none) */
#if NCF__VEC
    ncf__row_lanes(p, mm, vv, &d, D, src, ld, key, b0, b1, c, k, sgd, bad);
#if NCF__VW == 16
    ncf__row_half_lanes(p, mm, vv, &d, D, src, ld, key, b0, b1, c, k, sgd, bad);
#endif
#endif
    for (; d < D; d++) {
        float g = 0.0f;
        for (b = b0; b < b1; b++) g += src[(size_t)(key[b] & 0xffffffffu) * ld + d];
        if (c != 0.0f) g += c * p[d];
        bad->any |= sgd ? ncf__sgd_step(p + d, &g, 1, k) : ncf__adam_step(p + d, mm + d, vv + d, &g, 1, k);
    }
}

/* Phase 3, distinct rows [q0, q1) of nq on one side of the batch: each row's gradient in
   every table, summed over its batch positions in order, plus its L2 term. With k the row is
   then stepped at once (lazy Adam and SGD touch only the batch's rows; ncf__row_step), its
   gradient never stored in the cold gradient table, and the rows a few ahead prefetched (they
   are scattered over tables far larger than the caches); without, the gradient is summed into
   the table for ncf_update. Returns nonzero when a step wrote a non-finite parameter. */
static int ncf__update_batch_rows(ncf_model *m, int side, int n, int q0, int q1, int nq, const ncf__adam_k *k)
{
    struct ncf__scratch *s = m->scratch;
    const uint64_t *key = side ? s->batch.ikey : s->batch.ukey;
    const int *start = side ? s->batch.istart : s->batch.ustart;
    float coef[2];
    const float *src[2];
    int q, t, ld[2];
    ncf__row_check chk;
    memset(&chk, 0, sizeof chk);
    for (t = 0; t < s->tables.n; t++) src[t] = ncf__row_source(m, t, side, &ld[t], &coef[t], n);
    for (q = q0; k && q < q0 + NCF__AHEAD && q < nq; q++) NCF__PREFETCH_ROW(m, side, key[start[q]] >> 32, 1);
    for (q = q0; q < q1; q++) {
        size_t r = (size_t)(key[start[q]] >> 32);
        if (k && q + NCF__AHEAD < nq) NCF__PREFETCH_ROW(m, side, key[start[q + NCF__AHEAD]] >> 32, 1);
        for (t = 0; t < s->tables.n; t++) {
            int D = s->tables.tab[t].D, b, d;
            float *p = (side ? s->tables.tab[t].item : s->tables.tab[t].user) + r * D, *g;
            float c = coef[t] * (float)(start[q + 1] - start[q]);
            if (k) {
                ncf__row_step(m, p, D, src[t], ld[t], key, start[q], start[q + 1], c, k, &chk);
                continue;
            }
            g = ncf__grad_of(m, p);
            for (b = start[q]; b < start[q + 1]; b++) {
                const float *xb = src[t] + (size_t)(key[b] & 0xffffffffu) * ld[t];
                for (d = 0; d < D; d++) g[d] += xb[d];
            }
            if (c != 0.0f)
                for (d = 0; d < D; d++) g[d] += c * p[d];
        }
    }
    return ncf__row_check_fold(&chk);
}

#define NCF__ROWS_PER_UNIT 32 /* distinct rows per unit */

/* Appends the batch's distinct rows to the touched lists (each row once until the update
   that clears it), for ncf_update after ncf_forward_backward. */
static void ncf__list_touched(ncf_model *m)
{
    struct ncf__scratch *s = m->scratch;
    int q;
    for (q = 0; q < s->batch.nuser; q++) {
        int32_t r = (int32_t)(s->batch.ukey[s->batch.ustart[q]] >> 32);
        if (!s->touched.flag[r]) s->touched.flag[r] = 1, s->touched.user[s->touched.nuser++] = r;
    }
    for (q = 0; q < s->batch.nitem; q++) {
        int32_t r = (int32_t)(s->batch.ikey[s->batch.istart[q]] >> 32);
        uint8_t *t = &s->touched.flag[m->cfg.num_users + r];
        if (!*t) *t = 1, s->touched.item[s->touched.nitem++] = r;
    }
}

/* Phase 3. With k (a whole step): the rows are updated as they are summed, and the dense
   parameters too; without (ncf_forward_backward): the rows are listed for ncf_update. */
static void ncf__rows_of_tables_phase(ncf__ctx *x, ncf_model *m, int n, const ncf__adam_k *k, int *bad)
{
    struct ncf__scratch *s = m->scratch;
    /* Counted from n, not from the distinct rows: a thread that arrives late must count the
       phase's units as the others did, and by then a thread ahead may have grouped the next
       batch. The distinct rows are read only by units, which cannot outlive the phase. */
    int64_t gu = NCF__CEIL_DIV(n, NCF__ROWS_PER_UNIT), gi = gu;
    int64_t units = gu + gi + (k ? ncf__layer_updates_count(m) : 1), lo, hi, u;
    const ncf__adam_k *rows_k = k && !ncf__dense_adam(m) ? k : NULL;
    while (ncf__claim(x, units, 1, &lo, &hi))
        for (u = lo; u < hi; u++) {
            int side = u >= gu, q0 = (int)(side ? u - gu : u) * NCF__ROWS_PER_UNIT,
                nq = side ? s->batch.nitem : s->batch.nuser, b = 0;
            if (u < gu + gi) {
                if (q0 < nq)
                    b = ncf__update_batch_rows(m, side, n, q0,
                                               q0 + NCF__ROWS_PER_UNIT < nq ? q0 + NCF__ROWS_PER_UNIT : nq, nq, rows_k);
            } else if (k) b = ncf__layer_update(m, u - gu - gi, k);
            else ncf__list_touched(m);
            if (b && bad) ncf__flag(bad, 1); /* (b is 0 when bad is NULL: no update ran) */
        }
}

/* Phase 4 of dense Adam: every embedding row. */
static void ncf__emb_phase(ncf__ctx *x, ncf_model *m, const ncf__adam_k *k, int *bad)
{
    int64_t lo, hi, u;
    while (ncf__claim(x, ncf__table_updates_count(m), 1, &lo, &hi))
        for (u = lo; u < hi; u++)
            if (ncf__table_update(m, u, k)) ncf__flag(bad, 1);
}

/* The transposed kernels, made afresh where a call begins: the caller may have changed any
   parameter since the last. The dense-parameter updates keep them current after that. */
static void ncf__transpose_phase(ncf__ctx *x, ncf_model *m)
{
    int64_t lo, hi, u;
    while (ncf__claim(x, ncf__layer_updates_count(m), 1, &lo, &hi))
        for (u = lo; u < hi; u++) {
            size_t a = m->scratch->emb_params + (size_t)u * NCF__CHUNK;
            ncf__transpose_part(m, a, a + NCF__CHUNK < m->num_params ? a + NCF__CHUNK : m->num_params);
        }
}

/* A flag's value once the phase that sets it is done. */
static int ncf__flag_value(const int *f)
{
#if NCF__TEAMS
    return __atomic_load_n(f, __ATOMIC_RELAXED);
#else
    return *f;
#endif
}

/* One whole step in a region: returns 0 and updates nothing when the loss is not finite;
   else updates (step t) and returns 1, setting *bad when a parameter became non-finite. */
static int ncf__step_phases(ncf__ctx *x, ncf_model *m, const ncf__batch *bt, int64_t t, double *loss, int *bad)
{
    ncf__adam_k k = ncf__adam_consts(m, t);
    ncf__rows_phase(x, m, bt, 1);
    ncf__sums_phase(x, m, bt, loss);
    if (!(*loss - *loss == 0.0)) return 0;
    ncf__rows_of_tables_phase(x, m, bt->n, &k, bad);
    if (ncf__dense_adam(m)) ncf__emb_phase(x, m, &k, bad);
    return 1;
}

static int ncf__reserve(ncf_model *m, int n); /* the batch buffers for n rows */

/* A batch the caller gave: checked, the buffers made ready for it. */
static int ncf__given_batch(ncf_model *m, ncf__batch *bt, const int32_t *users, const int32_t *items,
                            const float *labels, int n)
{
    int rc;
    if ((rc = ncf__writable(m, "training")) != NCF_OK) return rc;
    if ((rc = ncf__check_batch(m, users, items, labels, 1, n)) != NCF_OK) return rc;
    if ((rc = ncf__reserve(m, n)) != NCF_OK) return rc;
    memset(bt, 0, sizeof *bt);
    bt->users = (int32_t *)users, bt->items = (int32_t *)items, bt->labels = (float *)labels, bt->n = n;
    return NCF_OK;
}

NCFDEF int ncf_loss(ncf_model *m, const int32_t *users, const int32_t *items, const float *labels, int n, double *loss)
{
    ncf__team team = NCF__TEAM_INIT;
    ncf__batch bt;
    int rc;
    if (!m || !loss) return ncf__fail(NCF_ERR_ARG, "ncf_loss: NULL model or loss");
    if ((rc = ncf__given_batch(m, &bt, users, items, labels, n)) != NCF_OK) return rc;
    NCF__PARALLEL(ncf__rows_parallel(m, n))
    {
        ncf__ctx x = ncf__join(&team);
        ncf__rows_phase(&x, m, &bt, 0);
    }
    *loss = ncf__loss_total(m, n);
    return NCF_OK;
}

/* Whether rows have gradients waiting for ncf_update. */
static int ncf__pending(const ncf_model *m) { return m->scratch->touched.nuser || m->scratch->touched.nitem; }

NCFDEF int ncf_forward_backward(ncf_model *m, const int32_t *users, const int32_t *items, const float *labels, int n,
                                double *loss)
{
    ncf__team team = NCF__TEAM_INIT;
    ncf__batch bt;
    double l = 0;
    int rc;
    if (!m) return ncf__fail(NCF_ERR_ARG, "ncf_forward_backward: NULL model");
    if (m->cfg.optimizer == NCF_OPT_ALS)
        return ncf__fail(NCF_ERR_ARG, "ncf_forward_backward: an ALS model has no gradient step");
    if ((rc = ncf__given_batch(m, &bt, users, items, labels, n)) != NCF_OK) return rc;
    NCF__PARALLEL(ncf__rows_parallel(m, n))
    {
        ncf__ctx x = ncf__join(&team);
        ncf__transpose_phase(&x, m);
        ncf__rows_phase(&x, m, &bt, 1);
        ncf__sums_phase(&x, m, &bt, &l);
        ncf__rows_of_tables_phase(&x, m, n, NULL, NULL);
    }
    if (loss) *loss = l;
    return NCF_OK;
}

static NCF__MAYBE_UNUSED void ncf__zero_grad(ncf_model *m)
{
    struct ncf__scratch *s = m ? m->scratch : NULL;
    ptrdiff_t i;
    int t;
    if (!m || !m->grads) return; /* a model read in place has none */
    memset(m->grads + s->emb_params, 0, sizeof(float) * (m->num_params - s->emb_params));
    for (t = 0; t < s->tables.n; t++) {
        int D = s->tables.tab[t].D;
        float *gu = ncf__grad_of(m, s->tables.tab[t].user), *gi = ncf__grad_of(m, s->tables.tab[t].item);
        for (i = 0; i < s->touched.nuser; i++) memset(gu + (size_t)s->touched.user[i] * D, 0, sizeof(float) * D);
        for (i = 0; i < s->touched.nitem; i++) memset(gi + (size_t)s->touched.item[i] * D, 0, sizeof(float) * D);
    }
    for (i = 0; i < s->touched.nuser; i++) s->touched.flag[s->touched.user[i]] = 0;
    for (i = 0; i < s->touched.nitem; i++) s->touched.flag[m->cfg.num_users + s->touched.item[i]] = 0;
    s->touched.nuser = s->touched.nitem = 0;
}

/* ncf_update's units: the dense parameters, then (dense Adam) every embedding row, then each
   side's listed rows in g groups of NCF__ROWS_PER_UNIT (a group past the list does nothing). */
static int64_t ncf__update_units(const ncf_model *m, int64_t g)
{
    return ncf__layer_updates_count(m) + (ncf__dense_adam(m) ? ncf__table_updates_count(m) : 0) + 2 * g;
}

/* ncf_update unit u of those (ncf__update_units with g groups a side): the listed rows' flags
   cleared, the rows updated unless dense Adam did. */
static int ncf__update_unit(ncf_model *m, int64_t u, int64_t g, const ncf__adam_k *k)
{
    struct ncf__scratch *s = m->scratch;
    int64_t nd = ncf__layer_updates_count(m), ne = ncf__dense_adam(m) ? ncf__table_updates_count(m) : 0;
    int side, i, i0, i1, t, bad = 0;
    const int32_t *list;
    if (u < nd) return ncf__layer_update(m, u, k);
    if ((u -= nd) < ne) return ncf__table_update(m, u, k);
    u -= ne;
    side = u >= g;
    i0 = (int)(side ? u - g : u) * NCF__ROWS_PER_UNIT;
    i1 = i0 + NCF__ROWS_PER_UNIT, list = side ? s->touched.item : s->touched.user;
    if (i1 > (side ? s->touched.nitem : s->touched.nuser)) i1 = side ? s->touched.nitem : s->touched.nuser;
    for (i = i0; i < i1; i++) {
        s->touched.flag[(side ? m->cfg.num_users : 0) + list[i]] = 0;
        for (t = 0; t < s->tables.n && !ncf__dense_adam(m); t++) {
            int D = s->tables.tab[t].D;
            const float *row = (side ? s->tables.tab[t].item : s->tables.tab[t].user) + (size_t)list[i] * D;
            bad |= ncf__update_range(m, (size_t)(row - m->params), (size_t)D, k);
        }
    }
    return bad;
}

static void ncf__update_now(ncf_model *m)
{
    struct ncf__scratch *s = m->scratch;
    ncf__adam_k k = ncf__adam_consts(m, m->step + 1);
    ncf__team team = NCF__TEAM_INIT;
    int64_t rows = (int64_t)s->touched.nuser + s->touched.nitem;
    int64_t gu = NCF__CEIL_DIV(s->touched.nuser, NCF__ROWS_PER_UNIT),
            gi = NCF__CEIL_DIV(s->touched.nitem, NCF__ROWS_PER_UNIT);
    int64_t g = gu > gi ? gu : gi, units = ncf__update_units(m, g);
    double work = ncf__dense_adam(m) ? (double)m->num_params : (double)(m->num_params - s->emb_params) + 64.0 * rows;
    int bad = 0;
    NCF__PARALLEL(work > 16 * NCF__PAR_WORK)
    {
        ncf__ctx x = ncf__join(&team);
        int64_t lo, hi, u;
        while (ncf__claim(&x, units, 1, &lo, &hi))
            for (u = lo; u < hi; u++)
                if (ncf__update_unit(m, u, g, &k)) ncf__flag(&bad, 1);
    }
    s->touched.nuser = s->touched.nitem = 0;
    s->nonfinite |= bad;
    m->step++;
}

NCFDEF void ncf_update(ncf_model *m)
{
    if (m && m->grads && m->cfg.optimizer != NCF_OPT_ALS) ncf__update_now(m); /* (in place: no gradients) */
}

/* Refuses a non-finite loss (nothing updated) or a step that wrote a non-finite parameter. */
static int ncf__step_failed(ncf_model *m, double loss, int updated)
{
    if (!updated) {
        ncf__zero_grad(m);
        return ncf__fail(NCF_ERR_DATA,
                         "the loss is %g at step %lld: the parameters are not finite (learning "
                         "rate too high?)",
                         loss, (long long)m->step + 1);
    }
    return ncf__fail(NCF_ERR_DATA,
                     "step %lld made a parameter infinite or NaN (learning rate too high?); "
                     "stopped there",
                     (long long)m->step);
}

NCFDEF int ncf_train_step(ncf_model *m, const int32_t *users, const int32_t *items, const float *labels, int n,
                          double *loss)
{
    ncf__team team = NCF__TEAM_INIT;
    ncf__batch bt;
    double l = 0;
    int rc, updated = 0, bad = 0;
    if (m && ncf__pending(m)) { /* rows from an earlier ncf_forward_backward: update them too */
        if ((rc = ncf_forward_backward(m, users, items, labels, n, &l)) != NCF_OK) return rc;
        if (!(l - l == 0.0)) return ncf__step_failed(m, l, 0);
        m->scratch->nonfinite = 0;
        ncf_update(m);
        if (m->scratch->nonfinite) return ncf__step_failed(m, l, 1);
        if (loss) *loss = l;
        return NCF_OK;
    }
    if (!m) return ncf__fail(NCF_ERR_ARG, "ncf_train_step: NULL model");
    if (m->cfg.optimizer == NCF_OPT_ALS)
        return ncf__fail(NCF_ERR_ARG, "ncf_train_step: an ALS model has no gradient step");
    if ((rc = ncf__given_batch(m, &bt, users, items, labels, n)) != NCF_OK) return rc;
    team.pace = &m->scratch->pace, team.solo = team.pace->solo;
    NCF__PARALLEL(ncf__rows_parallel(m, n))
    {
        ncf__ctx x = ncf__join(&team);
        int up;
        ncf__transpose_phase(&x, m);
        up = ncf__step_phases(&x, m, &bt, m->step + 1, &l, &bad);
#if NCF__TEAMS
        if (omp_get_thread_num() == 0)
#endif
            updated = up;
    }
    if (!updated) return ncf__step_failed(m, l, 0);
    m->step++;
    if (bad) return ncf__step_failed(m, l, 1);
    if (loss) *loss = l;
    return NCF_OK;
}

/* ---- >>train-loop: steps, epochs, the public training calls ---------------------------------- */

#define NCF__BLOCK 1024 /* steps per parallel region */

typedef struct {
    ncf_progress_fn progress;
    void *ctx;
    int64_t done0, total; /* examples before this block, and in the whole run */
    double *sum;          /* loss * examples, summed so far */
} ncf__report;

/* Steps [0, nsteps) of a block, batch i being examples start + i*B.. of the epoch, in one
   region. losses[i] and bad[i] are step i's. Returns the steps that updated the model. */
static int ncf__train_block(ncf_model *m, const ncf__batch *first, int64_t end, int nsteps, double *losses, int *bad,
                            const ncf__report *rep)
{
    ncf__team team = NCF__TEAM_INIT;
    int B = m->cfg.batch_size, done = 0;
    int64_t t0 = m->step;
    team.pace = &m->scratch->pace, team.solo = team.pace->solo;
    NCF__PARALLEL(ncf__rows_parallel(m, B))
    {
        ncf__ctx x = ncf__join(&team);
        ncf__batch bt = *first;
        int i, lead = 1;
        double sum = *rep->sum;
#if NCF__TEAMS
        lead = omp_get_thread_num() == 0;
#endif
        ncf__transpose_phase(&x, m);
        for (i = 0; i < nsteps;) {
            int64_t seen;
            bt.start = first->start + (int64_t)i * B;
            bt.n = (int)(end - bt.start < B ? end - bt.start : B);
            if (!ncf__step_phases(&x, m, &bt, t0 + i + 1, &losses[i], &bad[i])) break;
            seen = rep->done0 + bt.start + bt.n - first->start;
            if (lead) {
                sum += losses[i] * bt.n;
                if (rep->progress && ((rep->done0 / B + i) % 16 == 15 || bt.start + bt.n == end))
                    rep->progress(rep->ctx, seen, rep->total, sum / (double)seen);
            }
            if (ncf__flag_value(&bad[i++])) break;
        }
        if (lead) done = i, *rep->sum = sum;
    }
    return done;
}

/* Rendle et al.'s recipe, MF trained by SGD one example a step (batch_size 1), is a run of
   millions of tiny steps: the batch machinery (a parallel region, row sorting, gradient
   tables) costs many times the step itself. This loop takes the same steps, the same math
   as ncf_train_step on one example, the logit from ncf__outfile: the user's and the item's
   rows and biases and the output bias move by lr times their gradient, each computed from
   the values before the step. The examples come from the sampler in chunks. */
#define NCF__SGD_CHUNK 1024 /* examples drawn at a time: 12 KB of stack */

static int ncf__per_example_sgd(const ncf_config *c)
{
    return c->model == NCF_MF && c->optimizer == NCF_OPT_SGD && c->batch_size == 1;
}

/* out[j] += the sum of TERM(a[k], b[k]) over k = j mod NCF__LANES: ncf__lane_squares of
   a[k]^2 + b[k]^2, ncf__lane_sums of a[k] + b[k]. The lanes as one vector where there is one:
   left to itself, GCC vectorizes these loops for AVX-512 16 floats at a time and shuffles the
   halves together, and a run of the recipe took 2.4x as long as with 8 (measured on an Intel
   Xeon with AVX-512). SSE's 4 lanes vectorize well as they are. */
#if NCF__VEC && NCF__VW >= 8
#define NCF__LANE_VECTORS(TERM) \
    do { \
        ncf__v8 v, x, y; \
        NCF__V8LOAD(v, out); \
        for (; k + NCF__LANES <= n; k += NCF__LANES) { \
            NCF__V8LOAD(x, a + k), NCF__V8LOAD(y, b + k); \
            v += TERM(x, y); \
        } \
        memcpy(out, &v, sizeof v); \
    } while (0)
#else
#define NCF__LANE_VECTORS(TERM) ((void)0)
#endif
#define NCF__LANE_FOLD(name, TERM) \
    static void name(const float *NCF__RESTRICT a, const float *NCF__RESTRICT b, int n, float *out) \
    { \
        int k = 0, j; \
        NCF__LANE_VECTORS(TERM); \
        for (; k + NCF__LANES <= n; k += NCF__LANES) \
            for (j = 0; j < NCF__LANES; j++) out[j] += TERM(a[k + j], b[k + j]); \
        for (; k < n; k++) out[k % NCF__LANES] += TERM(a[k], b[k]); \
    }
#define NCF__SQUARES(x, y) ((x) * (x) + (y) * (y))
#define NCF__SUM(x, y) ((x) + (y))
NCF__LANE_FOLD(ncf__lane_squares, NCF__SQUARES)
NCF__LANE_FOLD(ncf__lane_sums, NCF__SUM)

/* One example's step; returns its loss (the L2 terms included), NaN when the logit is not
   finite (nothing updated). *bad is set when a parameter it wrote is not finite. */
static double ncf__sgd_example(ncf_model *m, int32_t u, int32_t i, float y, int *bad)
{
    const int F = m->scratch->F;
    float *NCF__RESTRICT gu = m->gmf_user + (size_t)u * F, *NCF__RESTRICT gi = m->gmf_item + (size_t)i * F;
    float z = ncf__output(m, gu, gi, m->user_bias[u], i, NULL), p, dz, lr = m->cfg.lr, coef = 2.0f * m->cfg.mf_reg;
    float bu = m->user_bias[u], bi = m->item_bias[i];
    float sq[NCF__LANES] = {0}, sum[NCF__LANES] = {0}; /* the old rows' squares, the new rows' sum */
    int k, j;
    if (NCF__NONFINITE(z)) return z - z;
    p = ncf__sigmoid(z), dz = y > 0 ? y * (p - 1.0f) : p;
    ncf__lane_squares(gu, gi, F, sq); /* (three simple loops: each vectorizes, one fused would not) */
    for (k = 0; k < F; k++) {
        float a = gu[k], b = gi[k];
        gu[k] = a - lr * (dz * b + coef * a);
        gi[k] = b - lr * (dz * a + coef * b);
    }
    ncf__lane_sums(gu, gi, F, sum);
    for (k = NCF__LANES / 2; k >= 1; k /= 2)
        for (j = 0; j < k; j++) sq[j] += sq[j + k], sum[j] += sum[j + k];
    m->user_bias[u] = bu - lr * (dz + coef * bu);
    m->item_bias[i] = bi - lr * (dz + coef * bi);
    m->b_out[0] -= lr * dz;
    /* an infinite or NaN parameter makes the sum so (or one near FLT_MAX overflows it: diverged too) */
    *bad |= NCF__NONFINITE(sum[0] + m->user_bias[u] + m->item_bias[i] + m->b_out[0]);
    return ncf__bce(z, y) + m->cfg.mf_reg * ((double)sq[0] + (double)bu * bu + (double)bi * bi);
}

/* Examples [first, end) of the epoch (in ncf__fill_by_positive's order), a step each. */
static int ncf__train_sgd_examples(ncf_model *m, const ncf_sampler *s, int epoch, int64_t first, int64_t end,
                                   const ncf__report *rep)
{
    int32_t u[NCF__SGD_CHUNK], it[NCF__SGD_CHUNK];
    float y[NCF__SGD_CHUNK];
    const int F = m->scratch->F;
    int64_t pos;
    for (pos = first; pos < end;) {
        int n = (int)(end - pos < NCF__SGD_CHUNK ? end - pos : NCF__SGD_CHUNK), j, bad = 0;
        ncf__fill_by_positive(s, epoch, pos, n, u, it, y, NULL);
        for (j = 0; j < n; j++) {
            double l;
            /* every cache line of the rows of a step ahead: the item rows are random, in a table
               larger than the nearer caches. (In the loop, not a function of its own: GCC takes a
               function of prefetches alone for one without effects and drops its calls.) */
            if (j + NCF__AHEAD < n) {
                const char *a = (const char *)(m->gmf_user + (size_t)u[j + NCF__AHEAD] * F),
                           *b = (const char *)(m->gmf_item + (size_t)it[j + NCF__AHEAD] * F);
                size_t o;
                for (o = 0; o < sizeof(float) * (size_t)F; o += 64) NCF__PREFETCH(a + o), NCF__PREFETCH(b + o);
            }
            l = ncf__sgd_example(m, u[j], it[j], y[j], &bad);
            if (!(l - l == 0.0)) return ncf__step_failed(m, l, 0);
            m->step++;
            if (bad) return ncf__step_failed(m, l, 1);
            *rep->sum += l;
        }
        pos += n;
        if (rep->progress) rep->progress(rep->ctx, pos - first, rep->total, *rep->sum / (double)(pos - first));
    }
    return NCF_OK;
}

/* An epoch number the model can count to, and examples [first, first + count) within its n. */
static int ncf__epoch_span(const char *who, int epoch, int64_t first, int64_t count, int64_t n)
{
    if (epoch < 0 || epoch > NCF_MAX_EPOCH)
        return ncf__fail(NCF_ERR_ARG, "%s: epoch %d is outside 0 to NCF_MAX_EPOCH (%d)", who, epoch, NCF_MAX_EPOCH);
    if (first < 0 || count < 0 || first > n || count > n - first)
        return ncf__fail(NCF_ERR_ARG, "%s: %lld examples from %lld: outside the epoch's %lld", who, (long long)count,
                         (long long)first, (long long)n);
    return NCF_OK;
}

/* ncf_train_epoch of an ALS model: its checks as ncf_train_examples', then the epoch. */
static int ncf__als_train(ncf_model *m, const ncf_sampler *s, int epoch, ncf_progress_fn progress, void *ctx,
                          double *mean_loss)
{
    int rc;
    double l = 0;
    if ((rc = ncf__writable(m, "ncf_train_epoch")) != NCF_OK) return rc;
    if (ncf__has_features(m))
        return ncf__fail(NCF_ERR_ARG,
                         "ncf_train_epoch: ALS takes no features (train a features model with Adam or SGD)");
    if (ncf__is_shard(s->data)) return ncf__fail(NCF_ERR_ARG, "ncf_train_epoch: ALS trains whole data, not a shard");
    if (s->data->num_users > m->cfg.num_users || s->data->num_items > m->cfg.num_items)
        return ncf__fail(NCF_ERR_ARG, "ncf_train_epoch: the data has %d users and %d items, the model %d and %d",
                         s->data->num_users, s->data->num_items, m->cfg.num_users, m->cfg.num_items);
    if ((rc = ncf__epoch_span("ncf_train_epoch", epoch, 0, 0, 0)) != NCF_OK) return rc;
    if ((rc = ncf__als_epoch(m, s->data, progress, ctx, s->num_examples, &l)) != NCF_OK) return rc;
    if (progress) progress(ctx, s->num_examples, s->num_examples, l);
    if (mean_loss) *mean_loss = l;
    return NCF_OK;
}

NCFDEF int ncf_train_examples(ncf_model *m, const ncf_sampler *s, int epoch, int64_t first, int64_t count,
                              ncf_progress_fn progress, void *ctx, double *mean_loss)
{
    int B, rc = NCF_OK;
    int32_t *u, *it;
    float *y;
    double *losses, sum = 0;
    int *bad;
    int64_t pos, end;
    ncf__report rep;
    if (!m || !s || !s->data) return ncf__fail(NCF_ERR_ARG, "ncf_train_examples: NULL model or sampler");
    if ((rc = ncf__writable(m, "ncf_train_examples")) != NCF_OK) return rc;
    if (m->cfg.optimizer == NCF_OPT_ALS)
        return ncf__fail(NCF_ERR_ARG, "ncf_train_examples: ALS trains whole epochs (ncf_train_epoch)");
    if (ncf__is_shard(s->data))
        return ncf__fail(NCF_ERR_ARG, "ncf_train_examples: the data is a shard: train it with ncf_mpi_train_epoch");
    if (s->data->num_users > m->cfg.num_users || s->data->num_items > m->cfg.num_items)
        return ncf__fail(NCF_ERR_ARG, "ncf_train_examples: the data has %d users and %d items, the model %d and %d",
                         s->data->num_users, s->data->num_items, m->cfg.num_users, m->cfg.num_items);
    if ((rc = ncf__epoch_span("ncf_train_examples", epoch, first, count, s->num_examples)) != NCF_OK) return rc;
    B = m->cfg.batch_size;
    end = first + count;
    if (ncf__features_train_on(m)) { /* (its own loop: the composed rows between the steps) */
        rc = ncf__features_train(m, s, epoch, first, end, progress, ctx, &sum);
        if (rc == NCF_OK && mean_loss) *mean_loss = count ? sum / (double)count : 0;
        return rc;
    }
    rep.progress = progress, rep.ctx = ctx, rep.done0 = 0, rep.total = count, rep.sum = &sum;
    if (ncf__per_example_sgd(&m->cfg) && !ncf__pending(m)) {
        rc = ncf__train_sgd_examples(m, s, epoch, first, end, &rep);
        if (rc == NCF_OK && mean_loss) *mean_loss = count ? sum / (double)count : 0;
        return rc;
    }
    if ((rc = ncf__reserve(m, B)) != NCF_OK) return rc;
    u = NCF__NEW(int32_t, B), it = NCF__NEW(int32_t, B), y = NCF__NEW(float, B);
    losses = NCF__NEW(double, NCF__BLOCK), bad = NCF__NEW(int, NCF__BLOCK);
    if (!u || !it || !y || !losses || !bad) rc = ncf__fail(NCF_ERR_NOMEM, "out of memory for a batch of %d", B);
    for (pos = first; rc == NCF_OK && pos < end;) {
        int64_t steps = NCF__CEIL_DIV(end - pos, B);
        int nsteps = (int)(steps < NCF__BLOCK ? steps : NCF__BLOCK), done;
        ncf__batch bt;
        if (ncf__pending(m)) { /* rows from an earlier ncf_forward_backward: one step with them */
            int n = (int)(end - pos < B ? end - pos : B);
            double l = 0;
            ncf_sampler_fill(s, epoch, pos, n, u, it, y);
            if ((rc = ncf_train_step(m, u, it, y, n, &l)) != NCF_OK) break;
            sum += l * n, pos += n;
            continue;
        }
        memset(&bt, 0, sizeof bt);
        bt.users = u, bt.items = it, bt.labels = y, bt.smp = s, bt.epoch = epoch, bt.start = pos;
        memset(bad, 0, sizeof(int) * NCF__BLOCK);
        rep.done0 = pos - first;
        done = ncf__train_block(m, &bt, end, nsteps, losses, bad, &rep);
        m->step += done;
        pos += (int64_t)done * B;
        if (done > 0 && bad[done - 1]) rc = ncf__step_failed(m, losses[done - 1], 1);
        else if (done < nsteps) rc = ncf__step_failed(m, losses[done], 0);
    }
    NCF_FREE(u);
    NCF_FREE(it);
    NCF_FREE(y);
    NCF_FREE(losses);
    NCF_FREE(bad);
    if (rc == NCF_OK && mean_loss) *mean_loss = count ? sum / (double)count : 0;
    return rc;
}

NCFDEF int ncf_train_epoch(ncf_model *m, const ncf_sampler *s, int epoch, ncf_progress_fn progress, void *ctx,
                           double *mean_loss)
{
    int rc;
    if (!m || !s || !s->data) return ncf__fail(NCF_ERR_ARG, "ncf_train_epoch: NULL model or sampler");
    rc = m->cfg.optimizer == NCF_OPT_ALS
        ? ncf__als_train(m, s, epoch, progress, ctx, mean_loss)
        : ncf_train_examples(m, s, epoch, 0, s->num_examples, progress, ctx, mean_loss);
    if (rc == NCF_OK) m->epoch = epoch;
    ncf__refresh_cache(m); /* ready to serve and evaluate */
    return rc;
}

/* Jobs k = 0..n-1 at once, one thread each, every OpenMP region within a job on its thread
   alone: independent work (each job reads and writes only its own model), so each job's bits
   are those it has alone, on any number of threads. The failure of the first job by k that
   failed is the call's: its code and its text, and *failed its k. */
typedef int (*ncf__job_fn)(void *ctx, int k);
static int ncf__side_by_side(ncf__job_fn job, void *ctx, int n, int *failed)
{
    int *rcs = NCF__ZNEW(int, n), k, rc = NCF_OK;
    char *why = NCF__NEW(char, (size_t)n *NCF__ERR_BYTES); /* each job's message */
#ifdef _OPENMP
    int T = omp_get_max_threads();
#endif
    if (!rcs || !why) {
        NCF_FREE(rcs), NCF_FREE(why);
        return ncf__fail(NCF_ERR_NOMEM, "out of memory for %d runs side by side", n);
    }
    NCF__OMP(parallel for schedule(dynamic, 1) num_threads(ncf__team_of(n > 1, n < T ? n : T)))
    for (k = 0; k < n; k++) {
#ifdef _OPENMP
        omp_set_num_threads(1); /* (this thread's regions, within the job) */
#endif
        if ((rcs[k] = job(ctx, k)) != NCF_OK) memcpy(why + (size_t)NCF__ERR_BYTES * k, ncf__errbuf, NCF__ERR_BYTES);
    }
#ifdef _OPENMP
    omp_set_num_threads(T);
#endif
    for (k = 0; k < n && rc == NCF_OK; k++)
        if ((rc = rcs[k]) != NCF_OK) memcpy(ncf__errbuf, why + (size_t)NCF__ERR_BYTES * k, NCF__ERR_BYTES), *failed = k;
    NCF_FREE(rcs), NCF_FREE(why);
    return rc;
}

/* An epoch of models[k] from samplers[k], k = 0..n-1 (ncf_train_epoch_each). */
typedef struct {
    ncf_model *const *models;
    const ncf_sampler *samplers;
    int epoch;
    ncf_progress_fn progress;
    void *ctx;
    double *loss;
} ncf__each;

static int ncf__each_epoch(void *ctx, int k)
{
    const ncf__each *j = (const ncf__each *)ctx;
    return ncf_train_epoch(j->models[k], &j->samplers[k], j->epoch, k ? NULL : j->progress, j->ctx, &j->loss[k]);
}

/* SGD one example a step runs on one thread, so such models train side by side; the others
   in turn, each on every thread. */
NCFDEF int ncf_train_epoch_each(ncf_model *const *models, const ncf_sampler *samplers, int n, int epoch,
                                ncf_progress_fn progress, void *ctx, double *mean_loss)
{
    ncf__each j;
    int k, a, rc = NCF_OK, failed = 0, apart = 1;
    if (!models || !samplers || n < 1)
        return ncf__fail(NCF_ERR_ARG, "ncf_train_epoch_each: need models, their samplers and n >= 1 (got %d)", n);
    for (k = 0; k < n; k++) {
        if (!models[k] || !samplers[k].data)
            return ncf__fail(NCF_ERR_ARG, "ncf_train_epoch_each: model %d or its sampler is NULL", k);
        for (a = 0; a < k; a++)
            if (models[a] == models[k])
                return ncf__fail(NCF_ERR_ARG, "ncf_train_epoch_each: models %d and %d are the same model", a, k);
        apart = apart && ncf__per_example_sgd(&models[k]->cfg);
    }
    j.models = models, j.samplers = samplers, j.epoch = epoch, j.progress = progress, j.ctx = ctx;
    if (!(j.loss = NCF__ZNEW(double, n))) return ncf__fail(NCF_ERR_NOMEM, "ncf_train_epoch_each: out of memory");
    if (apart && n > 1) rc = ncf__side_by_side(ncf__each_epoch, &j, n, &failed);
    else
        for (k = 0; k < n && rc == NCF_OK; k++) failed = k, rc = ncf__each_epoch(&j, k);
    if (rc != NCF_OK && n > 1) {
        char which[24];
        snprintf(which, sizeof which, "model %d", failed);
        rc = ncf__prefix_error(rc, which);
    }
    if (rc == NCF_OK && mean_loss) {
        for (*mean_loss = 0, k = 0; k < n; k++) *mean_loss += j.loss[k];
        *mean_loss /= n;
    }
    NCF_FREE(j.loss);
    return rc;
}

static NCF__MAYBE_UNUSED float ncf__decayed_lr(float lr, int j, int epochs)
{
    return epochs > 0 && j >= 0 && j < epochs ? (float)(lr * (1.0 - (double)j / epochs)) : lr;
}

NCFDEF ncf_fit_opts ncf_fit_opts_default(void)
{
    ncf_fit_opts o;
    memset(&o, 0, sizeof o);
    o.epochs = 20, o.eval = ncf_eval_opts_default(), o.eval.target = NCF_EVAL_VALIDATION;
    return o;
}

/* The model's training state: parameters, Adam moments, counters. */
typedef struct {
    float *params, *m, *v;
    float *feat; /* the features' state (ncf__features_state), or NULL */
    int64_t step, epoch;
} ncf__snapshot;

/* The features' state copied into (take) or out of the snapshot. */
static void ncf__snapshot_features(const ncf_model *m, float *keep, int take)
{
    float *b[12];
    size_t n[12], at = 0;
    int k;
    if (!keep) return;
    ncf__features_state(m, b, n);
    for (k = 0; k < 12; at += n[k++])
        if (n[k]) memcpy(take ? keep + at : b[k], take ? b[k] : keep + at, sizeof(float) * n[k]);
}

static void ncf__snapshot_take(const ncf_model *m, ncf__snapshot *s)
{
    size_t n = sizeof(float) * m->num_params;
    ncf__snapshot_features(m, s->feat, 1);
    memcpy(s->params, m->params, n);
    if (m->adam_m && s->m) memcpy(s->m, m->adam_m, n), memcpy(s->v, m->adam_v, n);
    s->step = m->step, s->epoch = m->epoch;
}

static void ncf__snapshot_put(ncf_model *m, const ncf__snapshot *s)
{
    size_t n = sizeof(float) * m->num_params;
    memcpy(m->params, s->params, n);
    ncf__snapshot_features(m, s->feat, 0);
    if (m->adam_m && s->m) memcpy(m->adam_m, s->m, n), memcpy(m->adam_v, s->v, n);
    m->step = s->step, m->epoch = s->epoch;
    ncf_model_params_changed(m);
}

NCFDEF int ncf_fit(ncf_model *m, const ncf_dataset *data, const ncf_fit_opts *opts, ncf_fit_report *rep)
{
    ncf_sampler smp;
    ncf__snapshot best;
    ncf_metrics now, top;
    ncf_eval_opts eo;
    ncf_fit_opts dflt = ncf_fit_opts_default();
    const ncf_fit_opts *o = opts ? opts : &dflt;
    int rc, e, first, since = 0;
    if (!m || !data || !o || o->epochs < 0 || o->patience < 0 || o->eval.target != NCF_EVAL_VALIDATION)
        return ncf__fail(NCF_ERR_ARG,
                         "ncf_fit: need a model, data, options with epochs and patience >= 0, and a "
                         "validation target (choosing on test would overstate the test figures)");
    if ((rc = ncf__writable(m, "ncf_fit")) != NCF_OK) return rc;
    if (!ncf__has_val(data))
        return ncf__fail(NCF_ERR_ARG, "ncf_fit: the data has no validation items (ncf_hold_out_validation)");
    if (m->epoch > NCF_MAX_EPOCH - o->epochs)
        return ncf__fail(NCF_ERR_ARG, "ncf_fit: %d more epochs pass NCF_MAX_EPOCH", o->epochs);
    eo = o->eval;
    if ((rc = ncf_sampler_init(&smp, data, m->cfg.num_neg, m->cfg.seed)) != NCF_OK) return rc;
    smp.by_positive = o->by_positive;
    if ((rc = ncf_evaluate(m, data, &eo, &top)) != NCF_OK) return rc;
    best.params = NCF__NEW(float, m->num_params);
    best.m = m->adam_m ? NCF__NEW(float, m->num_params) : NULL,
    best.v = m->adam_v ? NCF__NEW(float, m->num_params) : NULL;
    {
        float *b[12];
        size_t n[12], nf = ncf__features_state(m, b, n);
        best.feat = nf ? NCF__NEW(float, nf) : NULL;
        if (nf && !best.feat) NCF_FREE(best.params), best.params = NULL; /* (refused below) */
    }
    if (!best.params || (m->adam_m && (!best.m || !best.v))) {
        NCF_FREE(best.params), NCF_FREE(best.m), NCF_FREE(best.v), NCF_FREE(best.feat);
        return ncf__fail(NCF_ERR_NOMEM, "ncf_fit: out of memory for a copy of the model's %lu parameters",
                         (unsigned long)m->num_params);
    }
    ncf__snapshot_take(m, &best);
    first = (int)m->epoch + 1;
    for (e = first; e < first + o->epochs && rc == NCF_OK; e++) {
        float lr = m->cfg.lr;
        double loss = 0;
        if (o->decay) m->cfg.lr = ncf__decayed_lr(lr, e - first, o->epochs);
        rc = ncf_train_epoch(m, &smp, e, o->progress, o->ctx, &loss);
        m->cfg.lr = lr; /* (the model's own rate is never the decayed one outside an epoch) */
        if (rc != NCF_OK || (rc = ncf_evaluate(m, data, &eo, &now)) != NCF_OK) break;
        if (o->epoch_done) o->epoch_done(o->ctx, e, loss, &now);
        if (ncf_metric_value(&now, eo.metric) > ncf_metric_value(&top, eo.metric))
            top = now, since = 0, ncf__snapshot_take(m, &best);
        else if (o->patience && ++since >= o->patience) {
            e++;
            break;
        }
    }
    if (rep) rep->epochs_trained = e - first, rep->chosen_epoch = (int)best.epoch, rep->chosen = top;
    if (rc == NCF_OK) ncf__snapshot_put(m, &best);
    NCF_FREE(best.params), NCF_FREE(best.m), NCF_FREE(best.v), NCF_FREE(best.feat);
    return rc;
}
#endif /* NCF_INFERENCE_ONLY */

/* ---- >>als (src/als.c) ----------------------------------------------------------------------- */
/* MF fitted to the whole matrix by alternating least squares (implicit ALS). The Gram matrices
   and the Cholesky solve serve an ALS model's fold-in, on a device too; the rest trains. */

/* G [K][K] = the sum of y y^T over side's MF rows y (0 users, 1 items; K = mf_dim), each
   entry summed over the rows in order; tmp: K floats for an int8 row. */
static void ncf__side_gram(const ncf_model *m, int side, ncf__wide *G, float *tmp)
{
    const ncf__table *T = &m->scratch->tables.tab[m->scratch->tables.gmf];
    int K = m->scratch->F, n = side ? m->cfg.num_items : m->cfg.num_users, r, a, b;
    memset(G, 0, sizeof(ncf__wide) * (size_t)K * K);
    for (r = 0; r < n; r++) {
        const float *y = ncf__emb_row(T, side, r, tmp);
        for (a = 0; a < K; a++) {
            ncf__wide ya = y[a], *Ga = G + (size_t)a * K;
            for (b = a; b < K; b++) Ga[b] += ya * y[b];
        }
    }
    for (a = 0; a < K; a++)
        for (b = a + 1; b < K; b++) G[(size_t)b * K + a] = G[(size_t)a * K + b];
}

/* An ALS model's fold-in solves with the other side's Gram matrix (>>fold-in): kept for both
   sides, where they are not past the projection's bound. */
static void ncf__refresh_gram(ncf_model *m)
{
    struct ncf__scratch *s = m->scratch;
    size_t KK = (size_t)s->F * s->F;
    int side;
    float *tmp = NULL;
    for (side = 0; side < 2; side++) NCF_FREE(s->cache.gram[side]), s->cache.gram[side] = NULL;
    if (m->cfg.optimizer != NCF_OPT_ALS || !s->F ||
        !ncf__proj_fits(m, 2 * KK * (sizeof(ncf__wide) / sizeof(float)) + (size_t)s->F))
        return;
    tmp = NCF__NEW(float, s->F);
    for (side = 0; side < 2 && tmp; side++)
        if ((s->cache.gram[side] = NCF__NEW(ncf__wide, KK)) != NULL) ncf__side_gram(m, side, s->cache.gram[side], tmp);
    NCF_FREE(tmp);
}

/* The cached Gram matrix of side's rows, when it is that of the current parameters, or NULL. */
static const ncf__wide *ncf__cached_gram(const ncf_model *m, int side)
{
    const struct ncf__scratch *s = m->scratch;
    return s->cache.step == m->step ? s->cache.gram[side] : NULL;
}

/* Solves A x = v in place by Cholesky's factors (A symmetric [K][K], its lower triangle
   overwritten). Returns nonzero when A is not positive definite. */
static int ncf__cholesky_solve(ncf__wide *A, int K, ncf__wide *v)
{
    int i, j, k;
    for (j = 0; j < K; j++) {
        ncf__wide *Aj = A + (size_t)j * K, d = Aj[j];
        for (k = 0; k < j; k++) d -= Aj[k] * Aj[k];
        if (!(d > 0)) return 1;
        Aj[j] = NCF__WIDE_SQRT(d);
        for (i = j + 1; i < K; i++) {
            ncf__wide *Ai = A + (size_t)i * K, e = Ai[j];
            for (k = 0; k < j; k++) e -= Ai[k] * Aj[k];
            Ai[j] = e / Aj[j];
        }
    }
    for (i = 0; i < K; i++) { /* L y = v */
        for (k = 0; k < i; k++) v[i] -= A[(size_t)i * K + k] * v[k];
        v[i] /= A[(size_t)i * K + i];
    }
    for (i = K - 1; i >= 0; i--) { /* L^T x = y */
        for (k = i + 1; k < K; k++) v[i] -= A[(size_t)k * K + i] * v[k];
        v[i] /= A[(size_t)i * K + i];
    }
    return 0;
}

#ifndef NCF_INFERENCE_ONLY        /* training */
#define NCF__ALS_CG_STEPS 3       /* conjugate gradient steps a row an epoch (implicit's default) */
#define NCF__ALS_REPORT_ROWS 4096 /* rows between progress reports */

/* One side's positives as rows: row r's are other-side rows idx[ptr[r] .. ptr[r+1]), each of
   confidence wt[j] (NULL: all 1). The users' are the data's own; the items' its transpose. */
typedef struct {
    int n;
    const int64_t *ptr;
    const int32_t *idx;
    const float *wt;
} ncf__als_side;

/* The items' side: the data's positives by item, users ascending within each. */
static int ncf__als_transpose(const ncf_dataset *ds, int64_t **ptr, int32_t **idx, float **wt)
{
    int64_t *at, j;
    int u, i;
    *ptr = NCF__ZNEW(int64_t, (size_t)ds->num_items + 1), at = NCF__NEW(int64_t, ds->num_items);
    *idx = NCF__NEW(int32_t, ds->num_train ? ds->num_train : 1);
    *wt = ds->weight ? NCF__NEW(float, ds->num_train ? ds->num_train : 1) : NULL;
    if (!*ptr || !at || !*idx || (ds->weight && !*wt)) {
        NCF_FREE(at);
        return ncf__fail(NCF_ERR_NOMEM, "ALS: out of memory for the positives of %d items", ds->num_items);
    }
    for (j = 0; j < ds->num_train; j++) (*ptr)[ds->items[j] + 1]++;
    for (i = 0; i < ds->num_items; i++) (*ptr)[i + 1] += (*ptr)[i], at[i] = (*ptr)[i];
    for (u = 0; u < ds->num_users; u++)
        for (j = ds->user_ptr[u]; j < ds->user_ptr[u + 1]; j++) {
            int64_t k = at[ds->items[j]]++;
            (*idx)[k] = u;
            if (*wt) (*wt)[k] = ds->weight[j];
        }
    NCF_FREE(at);
    return NCF_OK;
}

/* A = unobserved * Y^T Y + mf_reg * I over the first n rows of Y [n][K]: each entry summed
   over the rows in order, by one thread, so its bits do not depend on the thread count. */
static void ncf__als_gram(const float *Y, int n, int K, double w0, double lambda, double *A)
{
    int a0;
    memset(A, 0, sizeof(double) * (size_t)K * K);
    NCF__PARALLEL((float)n * K * K > 64 * NCF__PAR_WORK)
    NCF__OMP(for schedule(dynamic, 1))
    for (a0 = 0; a0 < K; a0 += 8) {
        int a1 = a0 + 8 < K ? a0 + 8 : K, a, b, r;
        for (r = 0; r < n; r++) {
            const float *y = Y + (size_t)r * K;
            for (a = a0; a < a1; a++) {
                double ya = y[a], *Aa = A + (size_t)a * K;
                for (b = a; b < K; b++) Aa[b] += ya * y[b];
            }
        }
    }
    for (a0 = 0; a0 < K; a0++) {
        int b;
        for (b = a0; b < K; b++) A[(size_t)a0 * K + b] *= w0, A[(size_t)b * K + a0] = A[(size_t)a0 * K + b];
        A[(size_t)a0 * K + a0] += lambda;
    }
}

/* y . v in four running sums (one would wait on each add). */
static double ncf__als_dot(const float *y, const double *v, int K)
{
    double d0 = 0, d1 = 0, d2 = 0, d3 = 0;
    int k;
    for (k = 0; k + 4 <= K; k += 4)
        d0 += y[k] * v[k], d1 += y[k + 1] * v[k + 1], d2 += y[k + 2] * v[k + 2], d3 += y[k + 3] * v[k + 3];
    for (; k < K; k++) d0 += y[k] * v[k];
    return (d0 + d1) + (d2 + d3);
}

/* out = A v. */
static void ncf__als_gram_apply(const double *A, int K, const double *v, double *out)
{
    int a, b;
    memset(out, 0, sizeof(double) * (size_t)K);
    /* (A symmetric: its columns read as rows, so the loops are axpys, which vectorize; four
       rows a pass, so out is loaded and stored once for four multiply-adds) */
    for (a = 0; a + 4 <= K; a += 4) {
        const double *A0 = A + (size_t)a * K, *A1 = A0 + K, *A2 = A1 + K, *A3 = A2 + K;
        double v0 = v[a], v1 = v[a + 1], v2 = v[a + 2], v3 = v[a + 3];
        for (b = 0; b < K; b++) out[b] += v0 * A0[b] + v1 * A1[b] + v2 * A2[b] + v3 * A3[b];
    }
    for (; a < K; a++) {
        const double *Aa = A + (size_t)a * K;
        double va = v[a];
        for (b = 0; b < K; b++) out[b] += va * Aa[b];
    }
}

/* out = (A + sum_j (c_j - w0) y_j y_j^T) v, the row's system applied to v. */
static void ncf__als_apply(const double *A, const float *Y, const ncf__als_side *sd, int r, int K, double w0,
                           const double *v, double *out)
{
    int64_t j;
    int b;
    ncf__als_gram_apply(A, K, v, out);
    for (j = sd->ptr[r]; j < sd->ptr[r + 1]; j++) {
        const float *y = Y + (size_t)sd->idx[j] * K;
        double d = ((sd->wt ? sd->wt[j] : 1.0) - w0) * ncf__als_dot(y, v, K);
        for (b = 0; b < K; b++) out[b] += d * y[b];
    }
}

/* Row x of side row r moved toward the solution of its least squares, (A + sum_j (c_j - w0)
   y_j y_j^T) x = sum_j c_j y_j, by conjugate gradients from where it is (Takacs et al. 2011,
   as implicit). buf: 4K doubles. Returns nonzero when the row is no longer finite. */
static int ncf__als_row(float *x, const double *A, const float *Y, const ncf__als_side *sd, int r, int K, double w0,
                        double *buf)
{
    double *xd = buf, *res = buf + K, *p = buf + (size_t)2 * K, *Ap = buf + (size_t)3 * K, rs = 0, rs1, pAp, step;
    int64_t j;
    int k, s, bad = 0;
    for (k = 0; k < K; k++) xd[k] = x[k];
    ncf__als_apply(A, Y, sd, r, K, w0, xd, res);
    for (k = 0; k < K; k++) res[k] = -res[k];
    for (j = sd->ptr[r]; j < sd->ptr[r + 1]; j++) {
        const float *y = Y + (size_t)sd->idx[j] * K;
        double c = sd->wt ? sd->wt[j] : 1.0;
        for (k = 0; k < K; k++) res[k] += c * y[k];
    }
    for (k = 0; k < K; k++) p[k] = res[k], rs += res[k] * res[k];
    for (s = 0; s < NCF__ALS_CG_STEPS && rs > 1e-30; s++) {
        ncf__als_apply(A, Y, sd, r, K, w0, p, Ap);
        for (pAp = 0, k = 0; k < K; k++) pAp += p[k] * Ap[k];
        if (!(pAp > 0)) break; /* (a singular system with mf_reg 0: x is as good as it gets along p) */
        step = rs / pAp;
        for (rs1 = 0, k = 0; k < K; k++) xd[k] += step * p[k], res[k] -= step * Ap[k], rs1 += res[k] * res[k];
        for (k = 0; k < K; k++) p[k] = res[k] + rs1 / rs * p[k];
        rs = rs1;
    }
    for (k = 0; k < K; k++) x[k] = (float)xd[k], bad |= NCF__NONFINITE(x[k]);
    return bad;
}

/* What an ALS epoch works in, allocated before it changes anything: the system's fixed part
   A [K][K], 4K doubles a thread, a figure a row, and the items' positives by item; and where
   its progress goes: rows of all are done, reported as that share of total examples. */
typedef struct {
    double *A, *buf, *part;
    int64_t *iptr;
    int32_t *iidx;
    float *iwt;
    ncf_progress_fn progress;
    void *ctx;
    int64_t done, all, total;
} ncf__als_work;

/* Rows [r0, r1) of side sd fitted (see below), the objective's part of each in w->part. */
static int ncf__als_rows(float *X, const float *Y, const ncf__als_side *sd, int r0, int r1, int K, double w0,
                         const ncf__als_work *w, int part, int big)
{
    const double *A = w->A;
    int r, bad = 0, T = ncf__threads();
    (void)big, (void)T; /* (without OpenMP) */
    NCF__OMP(parallel num_threads(ncf__team_of(big, T)))
    {
        int t = 0;
#ifdef _OPENMP
        t = omp_get_thread_num();
#endif
        NCF__OMP(for schedule(dynamic, 16) reduction(| : bad))
        for (r = r0; r < r1; r++) {
            float *x = X + (size_t)r * K;
            double *b = w->buf + (size_t)t * 4 * K;
            bad |= ncf__als_row(x, A, Y, sd, r, K, w0, b);
            if (part) {
                int64_t j;
                int k;
                double l = 0;
                for (k = 0; k < K; k++) b[k] = x[k];
                ncf__als_gram_apply(A, K, b, b + K);
                for (j = sd->ptr[r]; j < sd->ptr[r + 1]; j++) {
                    double s = ncf__als_dot(Y + (size_t)sd->idx[j] * K, b, K), cj = sd->wt ? sd->wt[j] : 1.0;
                    l += cj * (1 - s) * (1 - s) - w0 * s * s; /* (x^T A x counts the cell at w0) */
                }
                w->part[r] = l + ncf__als_dot(x, b + K, K);
            }
        }
    }
    return bad;
}

/* Side sd's rows X [n][K] fitted with the other side's Y [ny][K] fixed, a block of rows at a
   time with a progress report after each but the epoch's last (its caller reports the end with
   the loss, unknown before: NaN until then). With loss, *loss gets this side's part of the
   objective after the fit: sum_r (sum_j c_j (1 - s_j)^2 - w0 s_j^2 + x_r^T A x_r), s_j = x_r .
   y_j (the cells without a positive weigh w0 s^2 each through A). */
static int ncf__als_half(float *X, const float *Y, int ny, const ncf__als_side *sd, int K, const ncf_config *c,
                         ncf__als_work *w, double *loss)
{
    int r, r1, bad = 0, big = (float)sd->n * K * K > 16 * NCF__PAR_WORK;
    ncf__als_gram(Y, ny, K, c->unobserved, c->mf_reg, w->A);
    for (r = 0; r < sd->n; r = r1) {
        r1 = w->progress && sd->n - r > NCF__ALS_REPORT_ROWS ? r + NCF__ALS_REPORT_ROWS : sd->n;
        bad |= ncf__als_rows(X, Y, sd, r, r1, K, c->unobserved, w, loss != NULL, big);
        w->done += r1 - r;
        if (w->progress && w->done < w->all)
            w->progress(w->ctx, (int64_t)((double)w->total * (double)w->done / (double)w->all), w->total, NAN);
    }
    if (loss)
        for (*loss = 0, r = 0; r < sd->n; r++) *loss += w->part[r];
    if (bad) return ncf__fail(NCF_ERR_DATA, "ALS made a factor infinite or NaN (mf_reg too small for the data?)");
    return NCF_OK;
}

static void ncf__als_free(ncf__als_work *w)
{
    NCF_FREE(w->A), NCF_FREE(w->buf), NCF_FREE(w->part), NCF_FREE(w->iptr), NCF_FREE(w->iidx), NCF_FREE(w->iwt);
}

/* An ALS epoch: the users' rows, then the items'; *mean_loss the objective over the positives.
   Progress, when given, hears of every block of rows but the last as a share of total. */
static int ncf__als_epoch(ncf_model *m, const ncf_dataset *ds, ncf_progress_fn progress, void *ctx, int64_t total,
                          double *mean_loss)
{
    ncf__als_side users, items;
    ncf__als_work w;
    int K = m->cfg.mf_dim, rc, u;
    double loss = 0, reg = 0;
    memset(&w, 0, sizeof w);
    w.progress = progress, w.ctx = ctx, w.all = (int64_t)ds->num_users + ds->num_items, w.total = total;
    w.A = NCF__NEW(double, (size_t)K *K), w.buf = NCF__NEW(double, (size_t)ncf__threads() * 4 * K);
    w.part = NCF__NEW(double, ds->num_users > ds->num_items ? ds->num_users : ds->num_items);
    if (!w.A || !w.buf || !w.part) rc = ncf__fail(NCF_ERR_NOMEM, "ALS: out of memory for an mf_dim %d system", K);
    else rc = ncf__als_transpose(ds, &w.iptr, &w.iidx, &w.iwt);
    if (rc != NCF_OK) {
        ncf__als_free(&w);
        return rc;
    }
    memset(m->user_bias, 0, sizeof(float) * (size_t)m->cfg.num_users);
    memset(m->item_bias, 0, sizeof(float) * (size_t)m->cfg.num_items);
    m->b_out[0] = 0;
    users.n = ds->num_users, users.ptr = ds->user_ptr, users.idx = ds->items, users.wt = ds->weight;
    items.n = ds->num_items, items.ptr = w.iptr, items.idx = w.iidx, items.wt = w.iwt;
    rc = ncf__als_half(m->gmf_user, m->gmf_item, ds->num_items, &users, K, &m->cfg, &w, NULL);
    if (rc == NCF_OK) rc = ncf__als_half(m->gmf_item, m->gmf_user, ds->num_users, &items, K, &m->cfg, &w, &loss);
    ncf__als_free(&w);
    for (u = 0; rc == NCF_OK && u < ds->num_users; u++) {
        const float *x = m->gmf_user + (size_t)u * K;
        int k;
        for (k = 0; k < K; k++) reg += (double)m->cfg.mf_reg * x[k] * x[k];
    }
    if (rc == NCF_OK && mean_loss) *mean_loss = ds->num_train ? (loss + reg) / (double)ds->num_train : 0;
    return rc;
}

#endif /* NCF_INFERENCE_ONLY */

/* ---- >>eval (src/eval.c) --------------------------------------------------------------------- */
#ifndef NCF_INFERENCE_ONLY /* the whole stage: a device only serves */
/* Evaluation: each held-out item ranked among its candidates (sampled, or every unrated item),
   HR, NDCG, MRR and RecBole's metrics at any cut-off, the popularity baseline beside them. */

/* Whether a candidate's score counts against the held-out item's: ties do (pessimistic); a
   non-finite candidate ranks below every finite score. (A non-finite held-out score is a miss
   whatever the candidates: a diverged model scores HR 0, not 1.) */
static int ncf__ranks_above(float cand, float test) { return !NCF__NONFINITE(cand) && cand >= test; }

NCFDEF ncf_eval_opts ncf_eval_opts_default(void)
{
    ncf_eval_opts o;
    memset(&o, 0, sizeof o);
    o.k = 10;
    return o;
}

/* The held-out item of u for the target, or -1 (one item per user). */
static int32_t ncf__held_item(const ncf_dataset *d, int target, int u)
{
    return target == NCF_EVAL_VALIDATION ? ncf__val_of(d, u) : d->test_item[u];
}

/* Whether u is evaluated for the target: it has held-out items, and (a split of many items a
   user) training ones. */
static int ncf__evaluated(const ncf_dataset *d, int target, int u)
{
    int64_t n;
    ncf__held_list(d, target, u, &n);
    return n > 0 && (!d->test_ptr || d->user_ptr[u + 1] > d->user_ptr[u]);
}

/* The same, and then the item full ranking skips besides the training ones (the test's skips
   the validation item, rated; the validation's skips nothing: whatever chooses on it never
   reads the test items, for which the test item is one more unrated item) and the sampled
   negatives. */
static int32_t ncf__held(const ncf_dataset *d, int target, int u, int32_t *other, const int32_t **neg)
{
    int val = target == NCF_EVAL_VALIDATION;
    int32_t t = ncf__held_item(d, target, u);
    const int32_t *rows = val ? d->val_neg : d->eval_neg; /* (NULL without sampled negatives) */
    if (t < 0) return t;
    *other = val ? -1 : ncf__val_of(d, u);
    *neg = rows ? rows + (size_t)(u - d->shard.user_lo) * (size_t)(val ? d->num_val_neg : d->num_eval_neg) : NULL;
    return t;
}

/* Whether a model with ids names the data's users and items as the data does (a model
   without ids, or data without, is taken as it is); else the message says where not. */
static int ncf__ids_match(const ncf_model *m, const ncf_dataset *d)
{
    char a[NCF_MAX_ID_BYTES + 1], b[NCF_MAX_ID_BYTES + 1];
    int side, k;
    if (!ncf__has_ids(m) || (!d->raw_user && !d->user_text)) return 1;
    for (side = 0; side < 2; side++) {
        ncf__ids mt = ncf__model_ids(m, side), dt = ncf__dataset_ids(d, side);
        if (mt.num && dt.num && !mt.order && !memcmp(mt.num, dt.num, sizeof(int64_t) * (size_t)dt.n)) continue;
        for (k = 0; k < dt.n; k++)
            if (ncf__ids_name(&mt, k, a, sizeof a) < 0 || ncf__ids_name(&dt, k, b, sizeof b) < 0 || strcmp(a, b) != 0) {
                ncf__say("ncf_evaluate: the model's %s %d is '%s', the data's '%s': other ids (a model "
                         "answers for the ids it was trained on)",
                         side ? "item" : "user", k, ncf__shown(a, a + strlen(a)), b);
                return 0;
            }
    }
    return 1;
}

static int ncf__eval_args(const ncf_model *m, const ncf_dataset *data, const ncf_eval_opts *o, const ncf_metrics *out)
{
    int nneg;
    if (!m || !data || !data->user_ptr || !out || !o || o->k <= 0)
        return ncf__fail(NCF_ERR_ARG, "ncf_evaluate: need a model, a loaded dataset, an output and k > 0");
    if (data->num_users != NCF__USERS(m) ||
        data->num_items != m->cfg.num_items) /* (full ranking ranks the data's catalogue) */
        return ncf__fail(NCF_ERR_ARG,
                         "ncf_evaluate: the data has %d users and %d items, the model %d and %d: not the "
                         "data it was trained on",
                         data->num_users, data->num_items, NCF__USERS(m), m->cfg.num_items);
    if ((o->target != NCF_EVAL_TEST && o->target != NCF_EVAL_VALIDATION) ||
        (o->full_ranking != 0 && o->full_ranking != 1) || o->max_users < 0 || o->metric < NCF_METRIC_HR ||
        o->metric > NCF_METRIC_MAP)
        return ncf__fail(NCF_ERR_ARG,
                         "ncf_evaluate: target %d, full_ranking %d, max_users %d or metric %d is not one of its values",
                         o->target, o->full_ranking, o->max_users, o->metric);
    if ((o->cold_only != 0 && o->cold_only != 1) || (o->cold_only && !o->full_ranking) || o->baseline)
        return ncf__fail(NCF_ERR_ARG,
                         "ncf_evaluate: cold_only %d is 0 or 1, and 1 ranks in full; a baseline's "
                         "scores are for model NULL",
                         o->cold_only);
    if (!ncf__ids_match(m, data)) return NCF_ERR_ARG;
    if (data->report.holdout == NCF_HOLDOUT_NONE)
        return ncf__fail(NCF_ERR_DATA,
                         "ncf_evaluate: nothing to evaluate: the dataset holds no item out (holdout none)");
    if (o->target == NCF_EVAL_VALIDATION && !ncf__has_val(data))
        return ncf__fail(NCF_ERR_ARG, "ncf_evaluate: the dataset has no validation set (ncf_hold_out_validation)");
    if (data->test_ptr && !o->full_ranking)
        return ncf__fail(NCF_ERR_ARG,
                         "ncf_evaluate: a split of many items per user is evaluated by full ranking "
                         "(ncf_eval_opts.full_ranking): it has no sampled negatives");
    nneg = o->target == NCF_EVAL_VALIDATION ? data->num_val_neg : data->num_eval_neg;
    if (!o->full_ranking && nneg <= 0)
        return ncf__fail(NCF_ERR_ARG,
                         "ncf_evaluate: the dataset has no eval negatives (sample some, or rank all items)");
    return NCF_OK;
}

/* Users [u0, u1) with an item held out for the target. */
static int64_t ncf__eval_held(const ncf_dataset *d, int target, int u0, int u1)
{
    int64_t held = 0;
    int u;
    for (u = u0; u < u1; u++) held += ncf__evaluated(d, target, u);
    return held;
}

/* The share of those users that full ranking scores: a fixed sample, the same users every time. */
static double ncf__eval_share(const ncf_eval_opts *o, int64_t held)
{
    return o->full_ranking && o->max_users > 0 && held > o->max_users ? (double)o->max_users / (double)held : 1.0;
}

#define NCF__UNSCORED (-1)        /* a user's rank: not evaluated */
#define NCF__NONFINITE_SCORE (-2) /* evaluated, and its item's score is not finite: a miss */

/* How many candidates outrank u's held-out item cand[0]: its sampled negatives cand[1..ncand),
   sc[] the scores of cand[]; or, with full ranking, every item u did not rate, sc[j] item j's. */
static int64_t ncf__count_above(const ncf_dataset *d, int u, int32_t other, const int32_t *cand, int ncand, int full,
                                const float *sc)
{
    int32_t t = cand[0];
    int64_t r = 0;
    int j;
    if (full) {
        const int32_t *p = d->items + d->user_ptr[u], *pe = d->items + d->user_ptr[u + 1];
        for (j = 0; j < ncand; j++) {
            while (p < pe && *p < j) p++;
            if (j != t && j != other && !(p < pe && *p == j) && ncf__ranks_above(sc[j], sc[t])) r++;
        }
    } else {
        for (j = 1; j < ncand; j++) r += cand[j] != t && ncf__ranks_above(sc[j], sc[0]);
    }
    return r;
}

/* Whether full ranking's fixed sample takes user u. */
static int ncf__sampled_user(const ncf_eval_opts *o, double share, int u)
{
    return share >= 1 || ncf__uniform(ncf__hash3(o->seed ^ NCF__TAG_FULL, (uint64_t)u, 0)) < share;
}

#ifdef NCF_MPI /* (ranks of one held-out item, gathered over the ranks) */
/* rank[u - u0] for users [u0, u1): how many candidates score at least as high as the held-out
   item, or one of the two marks above. */
static int ncf__eval_ranks(ncf_model *m, const ncf_dataset *data, const ncf_eval_opts *o, double share, int u0, int u1,
                           int64_t *rank)
{
    const float *proj;
    float *own;
    int u, rc, failed = 0, ncand;
    ncand = o->full_ranking ? data->num_items
                            : 1 + (o->target == NCF_EVAL_VALIDATION ? data->num_val_neg : data->num_eval_neg);
    proj = ncf__projection_for(m, &own, &rc);
    if (rc != NCF_OK) return rc;
    NCF__PARALLEL_N(u1 - u0 > 1, ncf__threads() < u1 - u0 ? ncf__threads() : u1 - u0)
    {
        ncf__eval_buf e;
        int C = ncf__eval_chunk(m, ncand), j0;
        int32_t *cand = NCF__NEW(int32_t, ncand);
        float *sc = NCF__NEW(float, ncand);
        int have_e = ncf__eval_buf_alloc(&e, m, C), ok = have_e && cand && sc;
        if (!ok) {
            NCF__OMP(atomic write)
            failed = 1;
        }
        NCF__OMP(for schedule(dynamic, 8))
        for (u = u0; u < u1; u++) {
            int32_t other = -1, t;
            const int32_t *neg = NULL;
            int64_t r;
            t = ncf__held(data, o->target, u, &other, &neg);
            rank[u - u0] = NCF__UNSCORED;
            if (!ok || t < 0 || !ncf__sampled_user(o, share, u)) continue;
            cand[0] = t;
            if (!o->full_ranking) memcpy(cand + 1, neg, sizeof(int32_t) * (size_t)(ncand - 1));
            for (j0 = 0; j0 < ncand; j0 += C) { /* (a score does not depend on its chunk) */
                e.sc = sc + j0;
                ncf__score_user(m, proj, u, NULL, o->full_ranking ? NULL : cand + j0, j0,
                                ncand - j0 < C ? ncand - j0 : C, &e, j0 > 0);
            }
            r = ncf__count_above(data, u, other, cand, ncand, o->full_ranking, sc);
            rank[u - u0] = NCF__NONFINITE(sc[o->full_ranking ? t : 0]) ? NCF__NONFINITE_SCORE : r;
        }
        if (have_e) ncf__eval_buf_free(&e);
        NCF_FREE(cand), NCF_FREE(sc);
    }
    NCF_FREE(own);
    return failed ? ncf__fail(NCF_ERR_NOMEM, "out of memory for evaluation buffers") : NCF_OK;
}

/* HR@k, NDCG@k and MRR from the users' ranks, summed in user order. */
static void ncf__metrics_of(const int64_t *rank, int n, int k, ncf_metrics *out)
{
    double hsum = 0, nsum = 0, rsum = 0, asum = 0;
    int u, users = 0;
    for (u = 0; u < n; u++) {
        if (rank[u] == NCF__UNSCORED) continue;
        users++;
        if (rank[u] < 0) continue;
        rsum += 1.0 / (double)(rank[u] + 1);
        if (rank[u] < k)
            hsum += 1.0, nsum += log(2.0) / log((double)rank[u] + 2.0), asum += 1.0 / (double)(rank[u] + 1);
    }
    memset(out, 0, sizeof *out);
    out->users = users, out->k = k;
    out->hr = users ? hsum / users : 0;
    out->ndcg = users ? nsum / users : 0;
    out->mrr = users ? rsum / users : 0;
    out->recall = out->hr, out->precision = out->hr / k, out->map = users ? asum / users : 0; /* (one item each) */
}
#endif

/* A candidate of a top list: a better score first, then a lower item. */
typedef struct {
    float score;
    int32_t item;
} ncf__scored;

/* Whether a ranks after b in a top list. */
static int ncf__after(const ncf__scored *a, const ncf__scored *b)
{
    return a->score < b->score || (a->score == b->score && a->item > b->item);
}

static int ncf__cmp_scored(const void *a, const void *b)
{
    const ncf__scored *x = (const ncf__scored *)a, *y = (const ncf__scored *)b;
    return ncf__after(x, y) - ncf__after(y, x);
}

/* Keeps the best kmax candidates seen in h (*n of them), a heap whose root ranks last. */
static void ncf__top_push(ncf__scored *h, int *n, int kmax, ncf__scored c)
{
    int i = *n, p, l, w;
    if (*n < kmax) {
        for ((*n)++; i > 0 && ncf__after(&c, &h[p = (i - 1) / 2]); i = p) h[i] = h[p];
        h[i] = c;
        return;
    }
    if (!ncf__after(&h[0], &c)) return;
    for (i = 0;; i = w) {
        const ncf__scored *last = &c;
        w = i, l = 2 * i + 1;
        if (l < *n && ncf__after(&h[l], last)) w = l, last = &h[l];
        if (l + 1 < *n && ncf__after(&h[l + 1], last)) w = l + 1;
        if (w == i) break;
        h[i] = h[w];
    }
    h[i] = c;
}

/* The top of one user's ranking: where its held-out items fall among the first kmax (pos[],
   ascending), the rank of its best one, and (full ranking) the first kmax items. */
typedef struct {
    int64_t held; /* its held-out items; -1: not evaluated */
    int64_t best; /* the rank of the best of them (from 0), or NCF__NONFINITE_SCORE */
    int hits, ntop;
    int32_t *pos, *top; /* [kmax] each */
} ncf__ranking;

/* How many of sc[0..n) are finite and at least s, a finite score: one pass that vectorizes. */
static int64_t ncf__count_at_least(const float *sc, int64_t n, float s)
{
    int64_t j, r = 0;
    for (j = 0; j < n; j++) r += (sc[j] >= s) & (sc[j] - sc[j] == 0.0f);
    return r;
}

/* The same over the distinct items of three sorted lists (a user's rated ones). */
static int64_t ncf__rated_at_least(const int32_t *a, const int32_t *ae, const int32_t *b, int64_t nb, const int32_t *c,
                                   int64_t nc, const float *sc, float s)
{
    const int32_t *be = b ? b + nb : b, *ce = c ? c + nc : c;
    int64_t r = 0;
    for (;;) {
        int32_t x = INT32_MAX;
        if (a < ae && *a < x) x = *a;
        if (b < be && *b < x) x = *b;
        if (c < ce && *c < x) x = *c;
        if (x == INT32_MAX) return r;
        r += (sc[x] >= s) & (sc[x] - sc[x] == 0.0f);
        while (a < ae && *a == x) a++;
        while (b < be && *b == x) b++;
        while (c < ce && *c == x) c++;
    }
}

/* Full ranking of u's held-out items held[0..nh) against every item it did not rate (the
   training items and other[0..no) are rated), sc[] every item's score. heap: kmax entries,
   hs: nh. A candidate that ties a held-out item ranks above it; non-finite scores rank last. */
static void ncf__rank_full(const ncf_dataset *d, int u, const int32_t *held, int64_t nh, const int32_t *other,
                           int64_t no, const float *sc, int kmax, ncf__scored *heap, ncf__scored *hs, ncf__ranking *g)
{
    const int32_t *p = d->items + d->user_ptr[u], *pe = d->items + d->user_ptr[u + 1];
    int64_t h = 0, o = 0, nf = 0, r = 0, j, j0;
    int n = 0, i = 0, q = 0;
    for (j = 0; j < nh; j++)
        if (!NCF__NONFINITE(sc[held[j]])) hs[nf].score = sc[held[j]], hs[nf++].item = held[j];
    ncf__heap_sort((char *)hs, (size_t)nf, sizeof *hs, ncf__cmp_scored);
    if (nf)
        r = ncf__count_at_least(sc, d->num_items, hs[0].score) -
            ncf__rated_at_least(p, pe, held, nh, other, no, sc, hs[0].score);
    for (j0 = 0; kmax && j0 < d->num_items; j0 += 64) { /* (most items do not enter the top: */
        int64_t j1 = d->num_items - j0 < 64 ? d->num_items : j0 + 64;
        int any = n < kmax;
        float worst = n ? heap[0].score : 0.0f;
        for (j = j0; j < j1; j++) any |= sc[j] >= worst; /* a run none of which can is one vector pass) */
        for (j = j0; any && j < j1; j++) {
            ncf__scored c;
            c.score = sc[j], c.item = (int32_t)j;
            if (NCF__NONFINITE(c.score) || (n == kmax && !ncf__after(&heap[0], &c))) continue;
            while (p < pe && *p < j) p++;
            while (h < nh && held[h] < j) h++;
            while (o < no && other[o] < j) o++;
            if ((p < pe && *p == j) || (h < nh && held[h] == j) || (o < no && other[o] == j)) continue;
            ncf__top_push(heap, &n, kmax, c);
        }
    }
    ncf__heap_sort((char *)heap, (size_t)n, sizeof *heap, ncf__cmp_scored);
    g->held = nh, g->best = nf ? r : NCF__NONFINITE_SCORE, g->hits = g->ntop = 0;
    while (g->ntop < kmax && (i < n || q < nf)) /* the two lists merged, a tie to the unrated item */
        if (i < n && (q == nf || heap[i].score >= hs[q].score)) g->top[g->ntop++] = heap[i++].item;
        else g->pos[g->hits++] = g->ntop, g->top[g->ntop++] = hs[q++].item;
}

/* The figures' sums over users, at each k, as ncf_metrics (divided by the users at the end). */
static void ncf__add_ranking(const ncf__ranking *g, const int *ks, int nk, const float *pop, const double *idcg,
                             ncf_metrics *sum)
{
    int j, q;
    for (j = 0; j < nk; j++) {
        ncf_metrics *m = &sum[j];
        int k = ks[j], h = 0, n = g->ntop < k ? g->ntop : k;
        double dcg = 0, ap = 0, ps = 0;
        m->users++;
        if (g->best < 0) continue;
        for (q = 0; q < g->hits && g->pos[q] < k; q++, h++) {
            dcg += log(2.0) / log((double)g->pos[q] + 2.0);
            ap += (double)(q + 1) / (double)(g->pos[q] + 1);
        }
        m->mrr += 1.0 / (double)(g->best + 1);
        for (q = 0; q < n; q++) ps += pop[g->top[q]];
        m->popularity += n ? ps / n : 0;
        if (!h) continue;
        m->hr += 1.0;
        m->ndcg += dcg / idcg[g->held < k ? g->held : k];
        m->recall += (double)h / (double)g->held;
        m->precision += (double)h / (double)k;
        m->map += ap / (double)(g->held < k ? g->held : k);
    }
}

/* Users a block of the ranking holds at once: its lists stay within a few megabytes. */
static int ncf__rank_block(int kmax)
{
    int b = (1 << 20) / kmax;
    return b < 16 ? 16 : b > 4096 ? 4096 : b;
}

/* Per thread: a model's scoring buffers, and the candidates' and lists' room. */
typedef struct {
    ncf__eval_buf e;
    int have_e;
    int32_t *cand;
    float *sc;
    ncf__scored *heap, *hs;
} ncf__rank_buf;

static int ncf__rank_buf_alloc(ncf__rank_buf *b, const ncf_model *m, int ncand, int kmax, int items)
{
    memset(b, 0, sizeof *b);
    if (m) b->have_e = ncf__eval_buf_alloc(&b->e, m, ncf__eval_chunk(m, ncand));
    b->cand = NCF__NEW(int32_t, ncand), b->sc = NCF__NEW(float, ncand);
    b->heap = NCF__NEW(ncf__scored, kmax), b->hs = NCF__NEW(ncf__scored, items ? items : 1);
    return (!m || b->have_e) && b->cand && b->sc && b->heap && b->hs;
}

static void ncf__rank_buf_free(ncf__rank_buf *b)
{
    if (b->have_e) ncf__eval_buf_free(&b->e);
    NCF_FREE(b->cand), NCF_FREE(b->sc), NCF_FREE(b->heap), NCF_FREE(b->hs);
}

/* User u's ranking g for the target: scored by the model (proj its projection), or by pop. */
static void ncf__rank_user(const ncf_model *m, const float *proj, const float *pop, const ncf_dataset *d,
                           const ncf_eval_opts *o, int ncand, int kmax, int u, ncf__rank_buf *b, ncf__ranking *g)
{
    int64_t nh, no = 0, j0;
    const int32_t *held = ncf__held_list(d, o->target, u, &nh), *other = NULL, *neg = NULL;
    int32_t t, one = -1;
    if (o->target == NCF_EVAL_TEST) other = ncf__held_list(d, NCF_EVAL_VALIDATION, u, &no);
    if (o->full_ranking) {
        if (m)
            for (j0 = 0; j0 < ncand; j0 += ncf__eval_chunk(m, ncand)) { /* (a score does not depend on its chunk) */
                int C = ncf__eval_chunk(m, ncand);
                b->e.sc = b->sc + j0;
                ncf__score_user(m, proj, u, NULL, NULL, (int)j0, ncand - j0 < C ? (int)(ncand - j0) : C, &b->e, j0 > 0);
            }
        else memcpy(b->sc, o->baseline ? o->baseline : pop, sizeof(float) * (size_t)ncand);
        for (j0 = 0; o->cold_only && j0 < ncand; j0++) /* (a non-finite score is no candidate) */
            if (pop[j0] > 0) b->sc[j0] = (float)NAN;
        ncf__rank_full(d, u, held, nh, other, no, b->sc, kmax, b->heap, b->hs, g);
        return;
    }
    t = ncf__held(d, o->target, u, &one, &neg); /* sampled: one item and its negatives */
    b->cand[0] = t;
    memcpy(b->cand + 1, neg, sizeof(int32_t) * (size_t)(ncand - 1));
    if (m)
        for (j0 = 0; j0 < ncand; j0 += ncf__eval_chunk(m, ncand)) {
            int C = ncf__eval_chunk(m, ncand);
            b->e.sc = b->sc + j0;
            ncf__score_user(m, proj, u, NULL, b->cand + j0, 0, ncand - j0 < C ? (int)(ncand - j0) : C, &b->e, j0 > 0);
        }
    else
        for (j0 = 0; j0 < ncand; j0++) b->sc[j0] = (o->baseline ? o->baseline : pop)[b->cand[j0]];
    g->held = 1, g->ntop = 0;
    g->best = NCF__NONFINITE(b->sc[0]) ? NCF__NONFINITE_SCORE : ncf__count_above(d, u, -1, b->cand, ncand, 0, b->sc);
    g->hits = g->best >= 0 && g->best < kmax;
    if (g->hits) g->pos[0] = (int32_t)g->best;
}

static int ncf__at_args(const ncf_model *m, const ncf_dataset *d, const ncf_eval_opts *o, const int *ks, int nk,
                        const ncf_metrics *out, int *kmax)
{
    ncf_eval_opts one;
    int j, rc;
    if (!d || !d->user_ptr || !ks || !out || nk < 1 || nk > NCF_MAX_KS)
        return ncf__fail(NCF_ERR_ARG, "ncf_evaluate_at: need a loaded dataset, 1 to %d cut-offs and outputs",
                         NCF_MAX_KS);
    for (j = 0, *kmax = 1; j < nk; j++) {
        if (ks[j] < 1 || ks[j] > NCF_MAX_K)
            return ncf__fail(NCF_ERR_ARG, "ncf_evaluate_at: cut-off %d: need 1 to %d", ks[j], NCF_MAX_K);
        if (ks[j] > *kmax) *kmax = ks[j];
    }
    one = *o, one.k = ks[0];
    if (m) return ncf__eval_args(m, d, &one, out);
    if (ncf__is_shard(d)) return ncf__fail(NCF_ERR_ARG, "ncf_evaluate (popularity): the dataset is a shard");
    if (d->report.holdout == NCF_HOLDOUT_NONE)
        return ncf__fail(
            NCF_ERR_DATA,
            "ncf_evaluate (popularity): nothing to evaluate: the dataset holds no item out (holdout none)");
    if ((o->target != NCF_EVAL_TEST && o->target != NCF_EVAL_VALIDATION) ||
        (o->full_ranking != 0 && o->full_ranking != 1) || o->max_users < 0)
        return ncf__fail(NCF_ERR_ARG,
                         "ncf_evaluate (popularity): target %d, full_ranking %d or max_users %d is not one "
                         "of its values",
                         o->target, o->full_ranking, o->max_users);
    if (o->target == NCF_EVAL_VALIDATION && !ncf__has_val(d))
        return ncf__fail(NCF_ERR_ARG, "ncf_evaluate (popularity): the dataset has no validation set");
    if ((o->cold_only != 0 && o->cold_only != 1) || (o->cold_only && !o->full_ranking))
        return ncf__fail(NCF_ERR_ARG, "ncf_evaluate (popularity): cold_only %d is 0 or 1, and 1 ranks in full",
                         o->cold_only);
    if (d->test_ptr && !o->full_ranking)
        return ncf__fail(NCF_ERR_ARG,
                         "ncf_evaluate (popularity): a split of many items per user is evaluated by full ranking");
    rc = (o->target == NCF_EVAL_VALIDATION ? d->num_val_neg : d->num_eval_neg) > 0 || o->full_ranking;
    return rc ? NCF_OK : ncf__fail(NCF_ERR_ARG, "ncf_evaluate (popularity): the dataset has no eval negatives");
}

/* The rankings of users [u0, u1) into g[] (g's lists in pos, top: kmax each). */
static int ncf__rank_users(const ncf_model *m, const float *proj, const float *pop, const ncf_dataset *d,
                           const ncf_eval_opts *o, double share, int kmax, int u0, int u1, ncf__ranking *g)
{
    int ncand =
        o->full_ranking ? d->num_items : 1 + (o->target == NCF_EVAL_VALIDATION ? d->num_val_neg : d->num_eval_neg);
    int u, failed = 0;
    NCF__PARALLEL_N(u1 - u0 > 1, ncf__threads() < u1 - u0 ? ncf__threads() : u1 - u0)
    {
        ncf__rank_buf b;
        int ok = ncf__rank_buf_alloc(&b, m, ncand, kmax, d->num_items);
        if (!ok) {
            NCF__OMP(atomic write)
            failed = 1;
        }
        NCF__OMP(for schedule(dynamic, 8))
        for (u = u0; u < u1; u++) {
            g[u - u0].held = -1;
            if (ok && ncf__evaluated(d, o->target, u) && ncf__sampled_user(o, share, u))
                ncf__rank_user(m, proj, pop, d, o, ncand, kmax, u, &b, &g[u - u0]);
        }
        ncf__rank_buf_free(&b);
    }
    return failed ? ncf__fail(NCF_ERR_NOMEM, "out of memory for evaluation buffers") : NCF_OK;
}

NCFDEF int ncf_evaluate_at(const ncf_model *m, const ncf_dataset *d, const ncf_eval_opts *o, const int *ks, int nk,
                           ncf_metrics *out)
{
    const float *proj = NULL;
    float *own = NULL, *pop = NULL;
    double *idcg = NULL, share;
    int32_t *lists = NULL, *first = NULL;
    ncf__ranking *g = NULL;
    int64_t k;
    int rc, kmax = 1, B, u0, u, j;
    ncf_eval_opts dflt = ncf_eval_opts_default();
    if (!o) o = &dflt;
    if ((rc = ncf__at_args(m, d, o, ks, nk, out, &kmax)) != NCF_OK) return rc;
    if (m && NCF__MPI_STALE(m)) return ncf__fail(NCF_ERR_ARG, "ncf_evaluate: " NCF__STALE_TEXT);
    B = ncf__rank_block(kmax);
    pop = NCF__ZNEW(float, d->num_items ? d->num_items : 1), idcg = NCF__NEW(double, (size_t)kmax + 1);
    g = NCF__NEW(ncf__ranking, B), lists = NCF__NEW(int32_t, (size_t)B * 2 * (size_t)kmax);
    first = NCF__NEW(int32_t, d->num_items ? d->num_items : 1);
    if (!pop || !idcg || !g || !lists || !first) {
        rc = ncf__fail(NCF_ERR_NOMEM, "out of memory for evaluation");
        goto done;
    }
    if (m && ((proj = ncf__projection_for(m, &own, &rc)), rc != NCF_OK)) goto done;
    for (k = 0; k < d->num_train; k++) pop[d->items[k]] += 1.0f; /* exact: counts below 2^24 */
    for (j = 0, idcg[0] = 1; j < kmax; j++) idcg[j + 1] = (j ? idcg[j] : 0) + log(2.0) / log((double)j + 2.0);
    for (j = 0; j < d->num_items; j++) first[j] = INT32_MAX;
    for (u = 0; u < B; u++) g[u].pos = lists + (size_t)u * 2 * kmax, g[u].top = g[u].pos + kmax;
    memset(out, 0, sizeof *out * (size_t)nk);
    share = ncf__eval_share(o, ncf__eval_held(d, o->target, 0, d->num_users));
    for (u0 = 0; u0 < d->num_users && rc == NCF_OK; u0 += B) {
        int u1 = d->num_users - u0 < B ? d->num_users : u0 + B;
        if ((rc = ncf__rank_users(m, proj, pop, d, o, share, kmax, u0, u1, g)) != NCF_OK) break;
        for (u = u0; u < u1; u++) { /* summed in user order: the same bits on any threads */
            const ncf__ranking *r = &g[u - u0];
            if (r->held < 0) continue;
            ncf__add_ranking(r, ks, nk, pop, idcg, out);
            for (j = 0; j < r->ntop; j++)
                if (j < first[r->top[j]]) first[r->top[j]] = j;
        }
    }
    for (j = 0; j < nk && rc == NCF_OK; j++) {
        ncf_metrics *x = &out[j];
        double n = x->users ? (double)x->users : 1.0, covered = 0;
        for (u = 0; u < d->num_items; u++) covered += first[u] < ks[j];
        x->k = ks[j];
        x->hr /= n, x->ndcg /= n, x->mrr /= n, x->recall /= n, x->precision /= n, x->map /= n;
        x->popularity = o->full_ranking ? x->popularity / n : 0;
        x->coverage = o->full_ranking && d->num_items ? covered / d->num_items : 0;
    }
done:
    if (rc != NCF_OK && out && nk > 0 && nk <= NCF_MAX_KS) memset(out, 0, sizeof *out * (size_t)nk);
    NCF_FREE(own), NCF_FREE(pop), NCF_FREE(idcg), NCF_FREE(g), NCF_FREE(lists), NCF_FREE(first);
    return rc;
}

NCFDEF int ncf_evaluate(const ncf_model *m, const ncf_dataset *data, const ncf_eval_opts *o, ncf_metrics *out)
{
    ncf_eval_opts d = ncf_eval_opts_default();
    if (!o) o = &d;
    return ncf_evaluate_at(m, data, o, &o->k, 1, out);
}

NCFDEF double ncf_metric_value(const ncf_metrics *m, int metric)
{
    if (!m) return 0;
    switch (metric) {
    case NCF_METRIC_NDCG: return m->ndcg;
    case NCF_METRIC_MRR: return m->mrr;
    case NCF_METRIC_RECALL: return m->recall;
    case NCF_METRIC_PRECISION: return m->precision;
    case NCF_METRIC_MAP: return m->map;
    default: return m->hr;
    }
}

#endif /* NCF_INFERENCE_ONLY */

/* ---- >>tune (src/tune.c) --------------------------------------------------------------------- */
#ifndef NCF_INFERENCE_ONLY /* the whole stage: a device only serves */
/* A search over settings by successive halving, chosen on validation. */

/* The cost model: work a training example or an evaluated candidate takes, in units the
   reference machine (docs/tuning.md) does NCF__TUNE_RATE of a second on two threads. Dense
   layers run as batched products (cheap a multiply-add); embedding rows are random reads and
   Adam updates of their moments (dear a float); every example pays for its sampling and its
   share of a step's fixed costs. The weights are a least-squares fit to the measured seconds
   of the runs of two ml-1m searches (docs/tuning.md). */
#define NCF__TUNE_RATE 1.2e10
/* An ALS epoch: work a row does a factor squared (products with the Gram matrix), a training
   positive a factor (both of its rows' conjugate gradient steps), and a positive whatever its
   factors (fit to `bench als`'s epochs, make demo's build, 2 threads) */
#define NCF__ALS_ROW_WORK 9.4
#define NCF__ALS_POSITIVE_WORK 47.0
#define NCF__ALS_FIXED_WORK 340.0
#define NCF__TUNE_MAX_TRIALS 500 /* settings in rung 0 at most */
#define NCF__TUNE_DRAWS 5000     /* settings drawn at most to fill it */
#define NCF__MAX_SEEDS 64        /* ncf_tune_opts.seeds at most */

static double ncf__forward_work(const ncf_config *c)
{
    double w = c->model == NCF_MLP ? 0 : c->mf_dim;
    int l;
    if (c->model == NCF_NEUMF || c->model == NCF_MLP)
        for (l = 1; l < c->num_layers; l++) w += (double)c->layers[l - 1] * c->layers[l];
    return w;
}

static double ncf__example_work(const ncf_config *c)
{
    double rows;
    if (ncf__per_example_sgd(c))
        return 1600 + 17.0 * c->mf_dim; /* one thread's step (ncf__sgd_example) and its sampling */
    rows = c->model == NCF_MLP ? 0 : 2.0 * c->mf_dim;
    if (c->model == NCF_NEUMF || c->model == NCF_MLP) rows += c->layers[0];
    return 1.9 * ncf__forward_work(c) + 34 * rows + 5700;
}

/* The cost of `epochs` epochs of c on train positives. */
static double ncf__fit_cost(const ncf_config *c, double train, int epochs)
{
    if (c->optimizer == NCF_OPT_ALS) { /* rows x mf_dim^2 (the Gram matrix's products), positives x mf_dim */
        double K = c->mf_dim;
        return epochs *
            (NCF__ALS_ROW_WORK * ((double)c->num_users + c->num_items) * K * K + NCF__ALS_POSITIVE_WORK * train * K +
             NCF__ALS_FIXED_WORK * train) /
            NCF__TUNE_RATE;
    }
    return epochs * train * (1 + c->num_neg) * ncf__example_work(c) / NCF__TUNE_RATE;
}

/* The cost of `evals` evaluations of val_users users' items and their val_neg candidates. A
   score reads the item's GMF row, which on a catalogue larger than the cache comes from
   memory, and runs the MLP from the cached first layer, items across the vector lanes: the
   weights fit the seconds of full rankings of a 1,892 x 17,632 log (NeuMF's paper config;
   MF of 64 and 256 factors) and of ml-1m's sampled validation. */
static double ncf__eval_cost(const ncf_config *c, double val_users, int val_neg, int evals)
{
    double gmf = c->model == NCF_MLP ? 0 : c->mf_dim, mlp = ncf__forward_work(c) - gmf;
    return evals * val_users * (1 + val_neg) * (50 + gmf + 0.05 * mlp) / NCF__TUNE_RATE;
}

/* The cost of `epochs` epochs of c on train positives with evaluations of val_users users'
   items and their negatives: one before the first epoch and one after each (ncf_fit). */
static double ncf__run_cost(const ncf_config *c, double train, double val_users, int val_neg, int epochs)
{
    return ncf__fit_cost(c, train, epochs) + ncf__eval_cost(c, val_users, val_neg, val_users > 0 ? epochs + 1 : 0);
}

/* The validation candidates per user besides its item: its negatives, or (a split of many
   items) the catalogue. */
static int ncf__val_candidates(const ncf_dataset *d) { return d->val_ptr ? d->num_items - 1 : d->num_val_neg; }

static double ncf__val_users(const ncf_dataset *d)
{
    double n = 0;
    int u;
    for (u = 0; u < d->num_users; u++) {
        int64_t k;
        ncf__held_list(d, NCF_EVAL_VALIDATION, u, &k);
        n += k > 0;
    }
    return n;
}

/* The planned seconds of a run; 0 for a config ncf_model_create would refuse (its layers are read
   only up to num_layers once that is checked) or epochs past NCF_MAX_EPOCH. */
static NCF__MAYBE_UNUSED double ncf__tune_cost(const ncf_config *c, const ncf_dataset *d, int epochs)
{
    if (!c || !d || !d->user_ptr || epochs <= 0 || epochs > NCF_MAX_EPOCH || ncf__check_config(c, "config") != NCF_OK)
        return 0;
    return ncf__run_cost(c, (double)ncf__all_train(d), ncf__val_users(d), ncf__val_candidates(d), epochs);
}

/* The budget from the data's size: 50 epochs of the defaults, 30 s at least. */
static double ncf__tune_budget(const ncf_dataset *d)
{
    ncf_config c = ncf_config_default();
    double b;
    if (!d || !d->user_ptr) return 30;
    c.num_users = d->num_users, c.num_items = d->num_items;
    b = 50 * ncf__tune_cost(&c, d, 1);
    return b > 30 ? b : 30;
}

NCFDEF ncf_tune_opts ncf_tune_opts_default(void)
{
    ncf_tune_opts o;
    memset(&o, 0, sizeof o);
    o.budget = 0, o.seed = 1, o.max_epochs = 18, o.patience = 3, o.seeds = 4;
    o.eval = ncf_eval_opts_default(), o.eval.target = NCF_EVAL_VALIDATION;
    return o;
}

NCFDEF void ncf_tune_report_free(ncf_tune_report *rep)
{
    if (!rep) return;
    NCF_FREE(rep->runs);
    memset(rep, 0, sizeof *rep);
}

/* A uniform draw in [0, 1) for dimension dim of trial t. */
static double ncf__tune_draw(uint64_t seed, int t, int dim)
{
    return ncf__uniform(ncf__hash3(seed ^ NCF__TAG_TUNE, (uint64_t)t, (uint64_t)dim));
}

/* Trial t's settings: the defaults for t 0, else drawn (log-uniform rates, powers of two). Half
   the MF trials are Rendle et al.'s recipe: SGD one example a step, its rate decayed over the
   run (*decay), rows starting N(0, 0.1), 8 negatives: fewer fit a random validation item as
   well and the latest test item worse (docs/tuning.md). A quarter are ALS, the loss over
   every cell, whose L2 and unobserved weight are drawn. cold: Adam all of them (a search that
   ranks unseen items by their features: ALS and the recipe's step take none). */
static ncf_config ncf__trial_config(const ncf_dataset *d, uint64_t seed, int t, int *weighted, int *decay, int cold)
{
    ncf_config c = ncf_config_default();
    double kind = ncf__tune_draw(seed, t, 0), reg;
    int l;
    c.num_users = d->num_users, c.num_items = d->num_items, c.seed = seed;
    *weighted = d->weight != NULL, *decay = 0;
    if (t == 0) return c;
    c.model = kind < 0.5 ? NCF_MF : kind < 0.75 ? NCF_GMF : NCF_NEUMF;
    c.mf_dim = 8 << (int)(ncf__tune_draw(seed, t, 1) * (c.model == NCF_NEUMF ? 4 : 6)); /* 8..64, 8..256 */
    if (c.model == NCF_NEUMF) { /* a tower halving from 32..256 down to 8 */
        c.layers[0] = 32 << (int)(ncf__tune_draw(seed, t, 2) * 4);
        for (l = 1; c.layers[l - 1] > 8; l++) c.layers[l] = c.layers[l - 1] / 2;
        c.num_layers = l;
    }
    c.lr = (float)pow(10, -3.5 + 1.5 * ncf__tune_draw(seed, t, 3));
    reg = ncf__tune_draw(seed, t, 4) < 0.25 ? 0 : pow(10, -4.5 + 3 * ncf__tune_draw(seed, t, 5));
    c.mf_reg = (float)reg;
    if (c.model == NCF_NEUMF) c.mlp_reg[0] = (float)reg;
    c.num_neg = 1 << (int)(ncf__tune_draw(seed, t, 6) * 4);      /* 1, 2, 4, 8 */
    c.batch_size = 256 << (int)(ncf__tune_draw(seed, t, 7) * 4); /* 256..2048 */
    *weighted = d->weight && ncf__tune_draw(seed, t, 8) < 0.5;
    if (c.model == NCF_MF && !cold &&
        ncf__tune_draw(seed, t, 9) < 1.0 / 3) { /* around the recipe: 8 negatives, 64+ factors */
        c.optimizer = NCF_OPT_SGD, c.batch_size = 1, c.init_sd = 0.1f, *decay = 1, c.num_neg = 8;
        c.mf_dim = 64 << (int)(ncf__tune_draw(seed, t, 1) * 3);                            /* 64, 128, 256 */
        c.lr = (float)pow(10, -2 + 0.7 * ncf__tune_draw(seed, t, 3));                      /* 0.01..0.05 */
        c.mf_reg = reg > 0 ? (float)pow(10, -3 + 0.7 * ncf__tune_draw(seed, t, 5)) : 0.0f; /* 0.001..0.005 */
    } else if (c.model == NCF_MF && !cold &&
               ncf__tune_draw(seed, t, 10) < 0.5) { /* ALS: every cell, no rate or negatives */
        c.optimizer = NCF_OPT_ALS;
        c.mf_dim = 16 << (int)(ncf__tune_draw(seed, t, 1) * 4);              /* 16..128 */
        c.mf_reg = (float)pow(10, -2 + 3 * ncf__tune_draw(seed, t, 5));      /* 0.01..10 */
        c.unobserved = (float)pow(10, -2 + 2 * ncf__tune_draw(seed, t, 11)); /* 0.01..1 */
    }
    return c;
}

/* Whether o's search ranks unseen items (a cold-start split's validation) by their features:
   then every trial takes them, by gradients. */
static int ncf__tune_cold(const ncf_tune_opts *o) { return o->eval.cold_only && o->features[NCF_ITEM]; }

/* Trial t's use of o's side features (ncf_tune_opts.features). */
static void ncf__trial_features(const ncf_tune_opts *o, int t, ncf_trial *r)
{
    int s;
    for (s = 0; s < 2; s++)
        r->features[s] = !o->features[s] || r->cfg.optimizer == NCF_OPT_ALS || ncf__per_example_sgd(&r->cfg) ? 0
            : t == 0                             ? (o->feature_flags[s] & NCF_FEATURES_NO_ID ? 2 : 1)
            : s == NCF_ITEM && ncf__tune_cold(o) ? 1 + (int)(ncf__tune_draw(o->seed, t, 12 + s) * 2)
                                                 : (int)(ncf__tune_draw(o->seed, t, 12 + s) * 3);
    r->feature_scale =
        t && (r->features[0] || r->features[1]) ? (float)pow(4, -1 + 2 * ncf__tune_draw(o->seed, t, 14)) : 1.0f;
}

/* Trial t of the search: its settings and their features, no figures yet. */
static void ncf__trial(const ncf_dataset *d, const ncf_tune_opts *o, int t, ncf_trial *r)
{
    memset(r, 0, sizeof *r);
    r->trial = t, r->cfg = ncf__trial_config(d, o->seed, t, &r->weighted, &r->decay, ncf__tune_cold(o));
    ncf__trial_features(o, t, r);
}

/* A family of settings: the model type, and SGD one example a step and ALS apart from the rest. */
#define NCF__FAMILIES 6
static int ncf__family(const ncf_config *c)
{
    return ncf__per_example_sgd(c) ? 4 : c->optimizer == NCF_OPT_ALS ? 5 : (int)c->model;
}

/* Better on validation: by the metric, then HR, then NDCG, then the earlier trial (a total
   order: no ties). */
static int ncf__run_better(const ncf_trial *a, const ncf_trial *b, int metric)
{
    double x = ncf_metric_value(&a->val, metric), y = ncf_metric_value(&b->val, metric);
    if (x != y) return x > y;
    if (a->val.hr != b->val.hr) return a->val.hr > b->val.hr;
    if (a->val.ndcg != b->val.ndcg) return a->val.ndcg > b->val.ndcg;
    return a->trial < b->trial;
}

/* m given r's side features (trained through them from here on; data says which entities train). */
static int ncf__trial_set_features(ncf_model *m, const ncf_trial *r, const ncf_features *const *features,
                                   const ncf_dataset *data)
{
    int s, rc = NCF_OK;
    for (s = 0; s < 2 && rc == NCF_OK; s++)
        if (r->features[s])
            rc = ncf_model_set_features(m, s, features[s], data, r->features[s] == 2 ? NCF_FEATURES_NO_ID : 0,
                                        r->feature_scale);
    return rc;
}

/* A run's epochs told to ncf_tune_opts.epoch_done. */
typedef struct {
    const ncf_tune_opts *o;
    const ncf_trial *r;
} ncf__run_epochs;

static void ncf__run_epoch_done(void *ctx, int epoch, double loss, const ncf_metrics *validation)
{
    const ncf__run_epochs *e = (const ncf__run_epochs *)ctx;
    e->o->epoch_done(e->o->ctx, e->r, epoch, loss, validation);
}

/* One run: a fresh model of r's settings trained by ncf_fit; r gets the figures. tell: its
   epochs go to o->epoch_done. */
static int ncf__tune_run(const ncf_dataset *d, const ncf_tune_opts *o, ncf_trial *r, int tell)
{
    ncf_dataset view = *d; /* (the same arrays; without weights when the run does not use them) */
    ncf_fit_opts fo = ncf_fit_opts_default();
    ncf_fit_report fr;
    ncf_model *m = NULL;
    ncf__run_epochs told;
    int rc;
    told.o = o, told.r = r;
    if (tell && o->epoch_done) fo.epoch_done = ncf__run_epoch_done, fo.ctx = &told;
    if (!r->weighted) view.weight = NULL;
    /* (a decayed run trains its whole schedule: its validation often stalls while the rate is
       high and climbs as it falls, where patience would have stopped it) */
    fo.epochs = r->epochs, fo.patience = r->decay ? 0 : o->patience, fo.eval = o->eval, fo.decay = r->decay;
    if ((rc = ncf_model_create(&m, &r->cfg)) == NCF_OK &&
        (rc = ncf__trial_set_features(m, r, o->features, &view)) == NCF_OK &&
        (rc = ncf_fit(m, &view, &fo, &fr)) == NCF_OK)
        r->epochs_trained = fr.epochs_trained, r->chosen_epoch = fr.chosen_epoch, r->val = fr.chosen;
    ncf_model_free(m);
    return rc;
}

static int ncf__tune_check(const ncf_dataset *d, const ncf_tune_opts *o, ncf_tune_report *rep)
{
    int s, rc;
    if (!rep) return ncf__fail(NCF_ERR_ARG, "ncf_tune: NULL report");
    memset(rep, 0, sizeof *rep);
    rep->averaged.rung = -1;
    if (!d || !d->user_ptr || !o) return ncf__fail(NCF_ERR_ARG, "ncf_tune: need data and options");
    if (!ncf__has_val(d))
        return ncf__fail(NCF_ERR_ARG, "ncf_tune: the data has no validation items (ncf_hold_out_validation)");
    if (ncf__is_shard(d)) return ncf__fail(NCF_ERR_ARG, "ncf_tune: the data is a shard");
    if (!(o->budget >= 0 && o->budget <= 1e9) || o->max_epochs < 1 || o->max_epochs > 1000 || o->patience < 0 ||
        o->eval.target != NCF_EVAL_VALIDATION || !(o->max_seconds >= 0) || o->seeds < 0 || o->seeds > NCF__MAX_SEEDS)
        return ncf__fail(
            NCF_ERR_ARG,
            "ncf_tune: need 0 <= budget <= 1e9 (0: from the data's size), 1 <= max_epochs <= 1000, patience >= 0, "
            "max_seconds >= 0, 0 <= seeds <= %d and a validation target",
            NCF__MAX_SEEDS);
    if (o->eval.metric < NCF_METRIC_HR || o->eval.metric > NCF_METRIC_MAP || o->eval.k <= 0)
        return ncf__fail(NCF_ERR_ARG, "ncf_tune: eval.metric %d is not an NCF_METRIC_* (0 to %d), or eval.k %d <= 0",
                         o->eval.metric, NCF_METRIC_MAP, o->eval.k);
    for (s = 0; s < 2; s++) {
        if (o->features[s] && (rc = ncf__features_valid(o->features[s], "ncf_tune")) != NCF_OK) return rc;
        if (o->feature_flags[s] & ~NCF_FEATURES_NO_ID)
            return ncf__fail(NCF_ERR_ARG, "ncf_tune: feature_flags[%d] 0x%x: unknown flags", s,
                             (unsigned)o->feature_flags[s]);
    }
    return NCF_OK;
}

/* The work side features add to a training example of r: each side's rows composed from the
   id's and its features' (their mean count an entity), their gradients passed back and the rows
   stepped, on one thread, 4 a float of a row, and 400 an example for the serial phases' waits.
   Fit to the seconds of nine settings of MF, GMF and NeuMF on ml-100k with and without its
   genres (docs/tuning.md); NeuMF's products hide most of it. */
static double ncf__features_cost(const ncf_trial *r, const ncf_tune_opts *o, double train, int epochs)
{
    const ncf_config *c = &r->cfg;
    double R = 1 + (c->model == NCF_MLP ? 0 : c->mf_dim) +
        (c->model == NCF_NEUMF || c->model == NCF_MLP ? c->layers[0] / 2 : 0),
           w = 0;
    int s;
    for (s = 0; s < 2; s++) {
        const ncf_features *f = o->features[s];
        if (r->features[s] && f->num_entities) w += 4 * (1 + (double)f->ptr[f->num_entities] / f->num_entities) * R;
    }
    if (w > 0) w += 400;
    return epochs * train * (1 + c->num_neg) * w / NCF__TUNE_RATE;
}

/* The planned seconds of training r from k seeds for `epochs` epochs on train positives, with an
   evaluation of their average on val_users users each epoch: runs of SGD one example a step two
   at a time, one thread each of the reference machine's two (ncf__seeds_train). */
static double ncf__seeds_cost(const ncf_dataset *d, const ncf_tune_opts *o, const ncf_trial *r, int k, double train,
                              double val_users, int epochs)
{
    int rounds = ncf__per_example_sgd(&r->cfg) ? (k + 1) / 2 : k;
    return rounds * (ncf__run_cost(&r->cfg, train, 0, 0, epochs) + ncf__features_cost(r, o, train, epochs)) +
        ncf__run_cost(&r->cfg, 0, k * val_users, ncf__val_candidates(d), epochs);
}

/* The epochs the seeds' run on training alone is planned at: those r's run trained, where its
   patience stopped it (the seeds' run has the same patience), its rung's epochs at most. */
static int ncf__seeds_epochs(const ncf_trial *r)
{
    return r->epochs_trained > 0 && r->epochs_trained < r->epochs ? r->epochs_trained : r->epochs;
}

/* The seeds the final averages: up to o->seeds for a winner ncf_model_average takes (MF, GMF),
   as many as `left` of the budget pays for, one at least: their run on training alone
   (ncf__seeds_epochs), and the final's on training + validation, planned at r's chosen epochs
   (the average's often come later, and the final then runs past its plan by the difference;
   planned at all r's epochs, ml-1m's 600 s would pay for 2 seeds, not 4: docs/tuning.md). */
static int ncf__final_seeds(const ncf_dataset *d, const ncf_tune_opts *o, const ncf_trial *r, double left)
{
    int k = o->seeds > 1 && ncf__averages(&r->cfg) ? o->seeds : 1, chosen = r->chosen_epoch > 0 ? r->chosen_epoch : 1;
    double train = (double)ncf__all_train(d), all = train + ncf__val_users(d);
    while (k > 1 &&
           ncf__seeds_cost(d, o, r, k, train, ncf__val_users(d), ncf__seeds_epochs(r)) +
                   ncf__seeds_cost(d, o, r, k, all, 0, chosen) >
               left)
        k--;
    return k;
}

/* A run's share of the plan: its cost alone, or for SGD one example a step, whose training
   runs on one thread, half its training (such runs go two at a time, one thread each of the
   reference machine's two) and its whole evaluations (each then on one thread, at half the
   rate the cost model counts). */
static double ncf__plan_cost(const ncf_trial *r, const ncf_tune_opts *o, const ncf_dataset *d, double val_users,
                             int epochs)
{
    const ncf_config *c = &r->cfg;
    double cost = ncf__run_cost(c, (double)d->num_train, val_users, ncf__val_candidates(d), epochs) +
        ncf__features_cost(r, o, (double)d->num_train, epochs);
    return ncf__per_example_sgd(c) ? cost - ncf__fit_cost(c, (double)d->num_train, epochs) / 2 : cost;
}

/* The trials of a rung in the order run: the others as drawn or ranked, then those of SGD one
   example a step, so that these pair up. */
static void ncf__sgd_last(const ncf_dataset *d, const ncf_tune_opts *o, int *alive, int n)
{
    int i, j, t;
    for (i = 1; i < n; i++) { /* (an insertion sort: stable) */
        ncf_trial a, b;
        ncf__trial(d, o, alive[i], &a);
        if (ncf__per_example_sgd(&a.cfg)) continue;
        for (t = alive[i], j = i; j > 0; j--) {
            ncf__trial(d, o, alive[j - 1], &b);
            if (!ncf__per_example_sgd(&b.cfg)) break;
            alive[j] = alive[j - 1];
        }
        alive[j] = t;
    }
}

/* Whether trial t is among alive[0..n). */
static int ncf__among(const int *alive, int n, int t)
{
    while (n > 0 && alive[n - 1] != t) n--;
    return n > 0;
}

/* The partner of a lone run of SGD one example a step among alive[0..n): the best-ranked such
   run of runs[order[0..m)] not in alive; -1 when the count is even or none is left. A lone such
   run leaves the reference machine's second core idle for its whole time, so its partner costs
   no time beyond the plan's half of the lone run, and the search sees one more setting of the
   family that learns slowest at first. (Rung 0 does the same with the first such setting drawn
   that its quarter did not pay for.) */
static int ncf__partner(const ncf_trial *runs, const int *order, int m, const int *alive, int n)
{
    int a, sgd = 0;
    for (a = 0; a < m; a++)
        sgd += ncf__per_example_sgd(&runs[order[a]].cfg) && ncf__among(alive, n, runs[order[a]].trial);
    for (a = 0; sgd % 2 && a < m; a++)
        if (ncf__per_example_sgd(&runs[order[a]].cfg) && !ncf__among(alive, n, runs[order[a]].trial))
            return runs[order[a]].trial;
    return -1;
}

/* A run of a search, for ncf__side_by_side: r[k]. */
typedef struct {
    const ncf_dataset *d;
    const ncf_tune_opts *o;
    ncf_trial *r;
} ncf__tune_job;

static int ncf__tune_one(void *ctx, int k)
{
    const ncf__tune_job *j = (const ncf__tune_job *)ctx;
    return ncf__tune_run(j->d, j->o, &j->r[k], k == 0);
}

/* The final's seeds: models of the winner from seeds r's + k, trained in step. */
typedef struct {
    ncf_model **models;
    ncf_sampler *smp;
    const ncf_trial *r;
    ncf_progress_fn progress;
    void *ctx;
} ncf__seeds;

/* n fresh models of r (the first with ids's ids; all of them when they take features, whose
   entities are found by id), each sampling data's positives. */
static int ncf__seeds_init(ncf__seeds *j, int n, const ncf_trial *r, const ncf_features *const *features,
                           const ncf_dataset *ids, const ncf_dataset *data)
{
    int k, rc = NCF_OK;
    memset(j, 0, sizeof *j);
    j->r = r;
    j->models = NCF__ZNEW(ncf_model *, n), j->smp = NCF__NEW(ncf_sampler, n);
    if (!j->models || !j->smp) return ncf__fail(NCF_ERR_NOMEM, "out of memory for %d seeds", n);
    for (k = 0; k < n && rc == NCF_OK; k++) {
        ncf_config c = r->cfg;
        c.seed = r->cfg.seed + (uint64_t)k, c.num_users = data->num_users, c.num_items = data->num_items;
        if ((rc = ncf_model_create(&j->models[k], &c)) == NCF_OK &&
            ((k && !r->features[0] && !r->features[1]) || (rc = ncf_model_set_ids(j->models[k], ids)) == NCF_OK) &&
            (rc = ncf__trial_set_features(j->models[k], r, features, data)) == NCF_OK)
            rc = ncf_sampler_init(&j->smp[k], data, c.num_neg, c.seed);
    }
    return rc;
}

static void ncf__seeds_free(ncf__seeds *j, int n)
{
    int k;
    for (k = 0; j->models && k < n; k++) ncf_model_free(j->models[k]);
    NCF_FREE(j->models), NCF_FREE(j->smp);
}

/* Epochs first..last of every seed (ncf_train_epoch_each), a decayed rate falling over the
   run's epochs as it fell. Progress is the first seed's. */
static int ncf__seeds_train(ncf__seeds *j, int n, int first, int last)
{
    int k, e, rc = NCF_OK;
    float lr = j->r->cfg.lr;
    for (e = first; e <= last && rc == NCF_OK; e++) {
        for (k = 0; k < n && j->r->decay; k++) j->models[k]->cfg.lr = ncf__decayed_lr(lr, e - 1, j->r->epochs);
        rc = ncf_train_epoch_each(j->models, j->smp, n, e, j->progress, j->ctx, NULL);
        for (k = 0; k < n; k++) j->models[k]->cfg.lr = lr;
    }
    return rc;
}

/* The seeds of the winner trained on training alone, in step, their average evaluated on
   validation after each epoch: rep->averaged gets the epoch it did best at and its figures
   (patience as in a run, but never before the winner's chosen epoch, up to which its own run
   was still improving: on a Steam log, 4 ALS seeds stopped at 6 of the winner's 15 epochs on a
   wobble, 0.0055 HR@10 below it; a decayed run trains its whole schedule). */
static int ncf__average_seeds(const ncf_dataset *d, const ncf_tune_opts *o, ncf_tune_report *rep)
{
    ncf_trial *a = &rep->averaged;
    ncf_dataset view = *d; /* (without weights when the winner did not use them) */
    ncf__seeds j;
    ncf_metrics now;
    int rc, e = 1, since = 0, first_stop = rep->runs[rep->best].chosen_epoch;
    if (!a->weighted) view.weight = NULL;
    if ((rc = ncf__seeds_init(&j, rep->seeds, a, o->features, d, &view)) == NCF_OK)
        for (e = 1; e <= a->epochs; e++) {
            ncf_model *avg = NULL;
            if ((rc = ncf__seeds_train(&j, rep->seeds, e, e)) != NCF_OK ||
                (rc = ncf_model_average(&avg, j.models, rep->seeds)) != NCF_OK)
                break;
            rc = ncf_evaluate(avg, &view, &o->eval, &now);
            ncf_model_free(avg);
            if (rc != NCF_OK) break;
            if (!a->chosen_epoch || ncf_metric_value(&now, o->eval.metric) > ncf_metric_value(&a->val, o->eval.metric))
                a->val = now, a->chosen_epoch = e, since = 0;
            else if (!a->decay && o->patience && ++since >= o->patience && e >= first_stop) {
                e++;
                break;
            }
        }
    a->epochs_trained = e - 1;
    ncf__seeds_free(&j, rep->seeds);
    return rc == NCF_OK ? NCF_OK : ncf__prefix_error(rc, "ncf_tune: the winner's seeds");
}

/* The final's plan: what the rungs left of the budget, a quarter at least, pays for the seeds;
   with more than one, their average chooses the final's epochs (ncf__average_seeds). A search
   past max_seconds trains the winner once, for its own chosen epochs. */
static int ncf__plan_final(const ncf_dataset *d, const ncf_tune_opts *o, ncf_tune_report *rep, double quarter,
                           time_t start)
{
    const ncf_trial *w = &rep->runs[rep->best];
    double left = o->budget - rep->planned_seconds;
    int rc;
    rep->averaged.rung = -1;
    rep->final_epochs = w->chosen_epoch > 0 ? w->chosen_epoch : 1;
    rep->seeds = ncf__final_seeds(d, o, w, left > quarter ? left : quarter);
    if (o->max_seconds > 0 && difftime(time(NULL), start) > o->max_seconds) rep->stopped = 1;
    if (rep->stopped) rep->seeds = 1;
    if (rep->seeds < 2) return NCF_OK;
    rep->averaged = *w;
    rep->averaged.rung = 3, rep->averaged.chosen_epoch = 0, rep->averaged.beside = 0, rep->averaged.partner = 0;
    rep->averaged.planned_seconds =
        ncf__seeds_cost(d, o, w, rep->seeds, (double)ncf__all_train(d), ncf__val_users(d), ncf__seeds_epochs(w));
    if (o->progress) o->progress(o->ctx, rep, &rep->averaged);
    if ((rc = ncf__average_seeds(d, o, rep)) != NCF_OK) return rc;
    rep->planned_seconds += rep->averaged.planned_seconds;
    rep->final_epochs = rep->averaged.chosen_epoch;
    return NCF_OK;
}

/* A search in progress: what its brackets share. */
typedef struct {
    const ncf_dataset *d;
    const ncf_tune_opts *o;
    ncf_tune_report *rep;
    double limit;                       /* three quarters of the budget: the first run past it ends the search */
    double val_users;                   /* users with validation items */
    int room;                           /* rep->runs' */
    int done;                           /* 1: a run did not fit the limit */
    int fresh;                          /* runs the bracket trained (the rest it took from earlier brackets) */
    int limited;                        /* 1: the bracket's quarter left out a setting or a run */
    int *alive, *order, *got, *a2, *o2; /* NCF__TUNE_MAX_TRIALS + 2 each */
    time_t start;
} ncf__search;

/* The place of trial t's run in rung k among the search's runs so far; -1 when it has none. */
static int ncf__ran(const ncf_tune_report *rep, int t, int k)
{
    int i;
    for (i = 0; i < rep->num_runs; i++)
        if (rep->runs[i].trial == t && rep->runs[i].rung == k) return i;
    return -1;
}

/* Room in rep->runs for `more` runs. */
static int ncf__room(ncf__search *s, int more)
{
    ncf_trial *r;
    int room;
    if (s->rep->num_runs + more <= s->room) return NCF_OK;
    room = 2 * s->room + more + 16;
    if (!(r = (ncf_trial *)NCF_REALLOC(s->rep->runs, sizeof *r * (size_t)room)))
        return ncf__fail(NCF_ERR_NOMEM, "ncf_tune: out of memory for %d runs", room);
    s->rep->runs = r, s->room = room;
    return NCF_OK;
}

/* Rung 0 of a bracket of quarter q into s->alive: the settings drawn, in order, that q pays for;
   the dearer ones passed over, and but for the defaults one that would take more than an eighth
   of q (drawn early, it would leave room for a handful of settings). Returns their count;
   *partner is the first SGD-one-example-a-step setting left out when those of the rest still
   to train are odd (ncf__partner), else -1. A bracket plans as if it trained every run. */
static int ncf__rung0(ncf__search *s, double q, int *partner)
{
    int t, n = 0, sgd = 0, spare = -1;
    double spent = 0;
    for (t = 0; t < NCF__TUNE_DRAWS && n < NCF__TUNE_MAX_TRIALS; t++) {
        ncf_trial r;
        double cost;
        int lone;
        ncf__trial(s->d, s->o, t, &r);
        cost = ncf__plan_cost(&r, s->o, s->d, s->val_users, s->rep->rung_epochs[0]);
        lone = ncf__per_example_sgd(&r.cfg) && ncf__ran(s->rep, t, 0) < 0;
        if (cost > q / 8 && t > 0) s->limited = 1;
        else if (spent + cost <= q) spent += cost, s->alive[n++] = t, sgd += lone;
        else {
            s->limited = 1;
            if (lone && spare < 0) spare = t;
        }
    }
    *partner = sgd % 2 && spare >= 0 && n < NCF__TUNE_MAX_TRIALS ? spare : -1;
    if (*partner >= 0) s->alive[n++] = spare;
    return n;
}

/* Rung k of a bracket: s->alive[0..n)'s runs, those an earlier bracket made taken as they were,
   the rest trained in the order drawn or ranked, those of SGD one example a step last and two
   at a time. s->got gets their places in rep->runs; returns their count in *m. The first run
   past s->limit ends the search, as does max_seconds. */
static int ncf__rung(ncf__search *s, int k, int n, int partner, int *m)
{
    ncf_tune_report *rep = s->rep;
    const ncf_tune_opts *o = s->o;
    int i, j, width, failed, rc = NCF_OK, *alive = s->alive;
    for (*m = 0, i = j = 0; i < n; i++) {
        int at = ncf__ran(rep, alive[i], k);
        if (at >= 0) s->got[(*m)++] = at;
        else alive[j++] = alive[i];
    }
    ncf__sgd_last(s->d, o, alive, n = j);
    for (i = 0; i < n && rc == NCF_OK; i += width) {
        ncf__tune_job job;
        double cost = 0;
        if (o->max_seconds > 0 && difftime(time(NULL), s->start) > o->max_seconds) {
            rep->stopped = 1;
            break;
        }
        if ((rc = ncf__room(s, 2)) != NCF_OK) break;
        job.d = s->d, job.o = o, job.r = &rep->runs[rep->num_runs];
        for (width = 1, j = 0; j < width; j++) {
            ncf_trial *r = &job.r[j];
            ncf__trial(s->d, o, alive[i + j], r);
            r->rung = k, r->epochs = rep->rung_epochs[k], r->partner = r->trial == partner;
            r->planned_seconds = ncf__plan_cost(r, o, s->d, s->val_users, r->epochs);
            if (j == 0 && i + 1 < n && ncf__per_example_sgd(&r->cfg)) width = 2; /* (the rest are, too) */
            cost += r->planned_seconds;
        }
        if (rep->planned_seconds + cost > s->limit) {
            s->done = 1;
            break;
        }
        for (j = 0; j < width && o->progress; j++) o->progress(o->ctx, rep, &job.r[j]);
        if ((rc = width > 1 ? ncf__side_by_side(ncf__tune_one, &job, width, &failed) : ncf__tune_one(&job, 0)) !=
            NCF_OK)
            break;
        for (j = 0; j < width; j++)
            job.r[j].beside = width > 1, rep->planned_seconds += job.r[j].planned_seconds,
            s->got[(*m)++] = rep->num_runs + j;
        rep->num_runs += width, s->fresh += width;
    }
    return rc;
}

/* The next rung of a bracket of quarter q from rung k's runs s->got[0..m), into s->alive; returns
   their count. The best third of each family goes on, those of them the quarter pays for (the
   families' firsts, then their seconds, ...; dearer ones passed over; none when none fits: a
   larger bracket trains them): the runs ranked by an insertion sort of their places in rep->runs. A family keeps its
   own third because families learn at different paces: SGD one example a step starts slower
   than Adam and ends ahead, and one ranking after two epochs would drop it (Hyperband's
   brackets answer the same problem with more budget). Then the rest go on by rank while the
   quarter pays: what the thirds leave of it is budget the user gave. *partner: the best SGD
   run left out when those to train are odd (ncf__partner), else -1. */
static int ncf__promote(ncf__search *s, int k, double q, int m, int *partner)
{
    const ncf_trial *runs = s->rep->runs;
    int a, b, f, place, n = 0, n2 = 0, m2 = 0, count[NCF__FAMILIES] = {0}, *order = s->order, *alive = s->alive;
    double next = 0;
    for (a = 0; a < m; a++) {
        for (b = a; b > 0 && ncf__run_better(&runs[s->got[a]], &runs[order[b - 1]], s->o->eval.metric); b--)
            order[b] = order[b - 1];
        order[b] = s->got[a];
        count[ncf__family(&runs[s->got[a]].cfg)]++;
    }
    for (place = 0; place < (m + 2) / 3; place++) {
        int at[NCF__FAMILIES] = {0};
        for (a = 0; a < m; a++) { /* each family's run at this place in its ranking */
            const ncf_trial *r = &runs[order[a]];
            double cost;
            f = ncf__family(&r->cfg);
            if (at[f]++ != place || place >= (count[f] + 2) / 3) continue;
            cost = ncf__plan_cost(r, s->o, s->d, s->val_users, s->rep->rung_epochs[k + 1]);
            if (next + cost <= q) next += cost, alive[n++] = r->trial;
            else s->limited = 1;
        }
    }
    for (a = 0; a < m; a++) { /* then the rest by rank, those the quarter still pays for */
        const ncf_trial *r = &runs[order[a]];
        double cost = ncf__plan_cost(r, s->o, s->d, s->val_users, s->rep->rung_epochs[k + 1]);
        if (ncf__among(alive, n, r->trial)) continue;
        if (next + cost <= q) next += cost, alive[n++] = r->trial;
        else s->limited = 1;
    }
    /* (the partner pairs a run still to train: those the search has made are left out of the count and
       of the choice) */
    for (a = 0; a < n; a++)
        if (ncf__ran(s->rep, alive[a], k + 1) < 0) s->a2[n2++] = alive[a];
    for (a = 0; a < m; a++)
        if (ncf__among(alive, n, runs[order[a]].trial) || ncf__ran(s->rep, runs[order[a]].trial, k + 1) < 0)
            s->o2[m2++] = order[a];
    if ((*partner = ncf__partner(runs, s->o2, m2, s->a2, n2)) >= 0) alive[n++] = *partner;
    return n;
}

/* One bracket of successive halving at L planned seconds: three rungs of a quarter of L each,
   as a search of budget L alone would plan them, its runs those of the earlier brackets where
   they made them. */
static int ncf__bracket(ncf__search *s, double L)
{
    double q = L / 4;
    int k, m = 0, partner, rc = NCF_OK, n = ncf__rung0(s, q, &partner);
    for (k = 0; k < 3 && n > 0; k++) {
        if ((rc = ncf__rung(s, k, n, partner, &m)) != NCF_OK || s->done || s->rep->stopped) break;
        if (k < 2) n = ncf__promote(s, k, q, m, &partner);
    }
    return rc;
}

/* The ladder of brackets: 2^(j/2) planned seconds. */
static double ncf__ladder(int j) { return ldexp(j & 1 ? 1.4142135623730951 : 1.0, (j - (j & 1)) / 2); }

/* ncf_tune; only > 0: the bracket of `only` planned seconds alone (a test's view of one). */
static int ncf__tune_ladder(const ncf_dataset *d, const ncf_tune_opts *opts, ncf_tune_report *rep, double only)
{
    int rc, i, j;
    double first;
    ncf__search s;
    ncf_tune_opts given = opts ? *opts : ncf_tune_opts_default();
    const ncf_tune_opts *o = &given;
    ncf_trial r0;
    if ((rc = ncf__tune_check(d, o, rep)) != NCF_OK) return rc;
    if (given.budget == 0) given.budget = ncf__tune_budget(d);
    rep->budget = given.budget, rep->features[0] = o->features[0], rep->features[1] = o->features[1];
    rep->rung_epochs[0] = o->max_epochs / 9 > 0 ? o->max_epochs / 9 : 1;
    rep->rung_epochs[1] = o->max_epochs / 3 > 0 ? o->max_epochs / 3 : 1;
    rep->rung_epochs[2] = o->max_epochs;
    memset(&s, 0, sizeof s);
    s.d = d, s.o = o, s.rep = rep, s.limit = 3 * o->budget / 4, s.val_users = ncf__val_users(d), s.start = time(NULL);
    if (!(s.alive = NCF__NEW(int, 5 * (size_t)(NCF__TUNE_MAX_TRIALS + 2))))
        return ncf__fail(NCF_ERR_NOMEM, "ncf_tune: out of memory");
    s.order = s.alive + NCF__TUNE_MAX_TRIALS + 2, s.got = s.order + NCF__TUNE_MAX_TRIALS + 2;
    s.a2 = s.got + NCF__TUNE_MAX_TRIALS + 2, s.o2 = s.a2 + NCF__TUNE_MAX_TRIALS + 2;
    /* (the first bracket's quarter pays for the defaults' first rung; a bracket that trains nothing
       and leaves nothing out is the last: the ones after it would be the same) */
    ncf__trial(d, o, 0, &r0);
    first = 4 * ncf__plan_cost(&r0, o, d, s.val_users, rep->rung_epochs[0]);
    for (j = -400; j < 400 && ncf__ladder(j) < first; j++) {}
    for (; j < 400 && rc == NCF_OK && !s.done && !rep->stopped && !only; j++) {
        s.fresh = s.limited = 0;
        rc = ncf__bracket(&s, ncf__ladder(j));
        if (!s.fresh && !s.limited) break;
    }
    if (only) rc = ncf__bracket(&s, only);
    NCF_FREE(s.alive);
    if (rc != NCF_OK) {
        ncf_tune_report_free(rep);
        return rc;
    }
    if (rep->num_runs == 0) {
        NCF_FREE(rep->runs);
        rep->runs = NULL, rep->too_small = 1;
        return NCF_OK;
    }
    for (i = 1, rep->best = 0; i < rep->num_runs; i++) /* the best on validation of every run */
        if (ncf__run_better(&rep->runs[i], &rep->runs[rep->best], o->eval.metric)) rep->best = i;
    for (i = 0, rep->num_trials = 0; i < rep->num_runs; i++) rep->num_trials += rep->runs[i].rung == 0;
    rc = ncf__plan_final(d, o, rep, o->budget / 4, s.start);
    if (o->progress && rc == NCF_OK) o->progress(o->ctx, rep, NULL);
    if (rc != NCF_OK) ncf_tune_report_free(rep);
    return rc;
}

NCFDEF int ncf_tune(const ncf_dataset *d, const ncf_tune_opts *opts, ncf_tune_report *rep)
{
    return ncf__tune_ladder(d, opts, rep, 0);
}

/* The training positives with each user's validation item put back in its place (and its
   weight where weights are used): the data of the final training. Only what the sampler reads
   is set; out's arrays are its own. */
static int ncf__train_with_validation(const ncf_dataset *d, int weighted, ncf_dataset *out)
{
    int64_t extra = d->val_ptr ? d->val_ptr[d->num_users] : 0, w = 0, k, j, nv;
    int u;
    memset(out, 0, sizeof *out);
    for (u = 0; !d->val_ptr && u < d->num_users; u++) extra += d->val_item[u] >= 0;
    out->num_users = d->num_users, out->num_items = d->num_items, out->num_train = d->num_train + extra;
    out->user_ptr = NCF__NEW(int64_t, (size_t)d->num_users + 1);
    out->items = NCF__NEW(int32_t, out->num_train ? out->num_train : 1);
    out->train_user = NCF__NEW(int32_t, out->num_train ? out->num_train : 1);
    if (weighted && d->weight) out->weight = NCF__NEW(float, out->num_train ? out->num_train : 1);
    if (!out->user_ptr || !out->items || !out->train_user || (weighted && d->weight && !out->weight)) {
        ncf_dataset_free(out);
        return ncf__fail(NCF_ERR_NOMEM, "out of memory for %lld training positives", (long long)(d->num_train + extra));
    }
    for (u = 0, out->user_ptr[0] = 0; u < d->num_users; u++) { /* the two ascending lists merged */
        const int32_t *v = ncf__held_list(d, NCF_EVAL_VALIDATION, u, &nv);
        const float *vw = d->val_weight ? d->val_weight + (d->val_ptr ? d->val_ptr[u] : u) : NULL;
        for (k = d->user_ptr[u], j = 0; k < d->user_ptr[u + 1] || j < nv; w++) {
            int take_val = j < nv && (k == d->user_ptr[u + 1] || d->items[k] > v[j]);
            out->items[w] = take_val ? v[j] : d->items[k], out->train_user[w] = u;
            if (out->weight) out->weight[w] = take_val ? (vw ? vw[j] : 1) : d->weight[k];
            if (take_val) j++;
            else k++;
        }
        out->user_ptr[u + 1] = w;
    }
    return NCF_OK;
}

NCFDEF int ncf_tune_final(ncf_model **out, const ncf_dataset *d, const ncf_tune_report *rep, ncf_progress_fn progress,
                          void *ctx)
{
    const ncf_trial *r;
    ncf_dataset all;
    ncf__seeds j;
    int rc, n, epochs;
    if (!out) return ncf__fail(NCF_ERR_ARG, "ncf_tune_final: NULL out");
    *out = NULL;
    if (!d || !d->user_ptr || !rep || !rep->runs || rep->best < 0 || rep->best >= rep->num_runs)
        return ncf__fail(NCF_ERR_ARG,
                         "ncf_tune_final: need data (the split ncf_tune searched, or the log without a hold-out) "
                         "and its report");
    r = &rep->runs[rep->best];
    n = rep->seeds > 1 && ncf__averages(&r->cfg) ? rep->seeds : 1;
    if (n > NCF__MAX_SEEDS) return ncf__fail(NCF_ERR_ARG, "ncf_tune_final: %d seeds, past %d", n, NCF__MAX_SEEDS);
    epochs = rep->final_epochs > 0 ? rep->final_epochs : r->chosen_epoch > 0 ? r->chosen_epoch : 1;
    if (!ncf__has_val(d)) { /* (everything is training: a view of d, which owns the arrays) */
        all = *d;
        if (!r->weighted) all.weight = NULL;
    } else if ((rc = ncf__train_with_validation(d, r->weighted, &all)) != NCF_OK) return rc;
    if ((rc = ncf__seeds_init(&j, n, r, rep->features, d, &all)) == NCF_OK) {
        j.progress = progress, j.ctx = ctx;
        rc = ncf__seeds_train(&j, n, 1, epochs);
    }
    if (rc == NCF_OK && n == 1) *out = j.models[0], j.models[0] = NULL;
    else if (rc == NCF_OK) rc = ncf_model_average(out, j.models, n);
    ncf__seeds_free(&j, n);
    if (ncf__has_val(d)) ncf_dataset_free(&all);
    return rc == NCF_OK ? rc : ncf__prefix_error(rc, "ncf_tune_final");
}
#endif

/* ---- >>serve (src/serve.c) ------------------------------------------------------------------- */
/* ---- >>model-ids: the model's id tables and rated items ------------------------------------- */

NCFDEF void ncf_free(void *p) { NCF_FREE(p); }

NCFDEF void ncf_model_params_changed(ncf_model *m)
{
    if (m && m->scratch) ncf__refresh_cache(m);
}

/* Integer ids given out of order (by hand) are found through a sorted index, made once here;
   every loader gives them ascending, which needs none. A raw id given twice is refused. Text
   ids are always ascending (checked where they are read). */
typedef struct {
    int64_t raw;
    int32_t dense;
} ncf__idpair;

static int ncf__cmp_idpair(const void *a, const void *b)
{
    int64_t x = ((const ncf__idpair *)a)->raw, y = ((const ncf__idpair *)b)->raw;
    return (x > y) - (x < y);
}

static int ncf__id_order(const int64_t *raw, int n, int32_t **order, const char *what)
{
    ncf__idpair *p;
    int k;
    NCF__DROP(*order);
    if (!raw) return NCF_OK;
    for (k = 1; k < n && raw[k - 1] < raw[k]; k++) {}
    if (k >= n) return NCF_OK; /* ascending: the identity */
    if (!(p = NCF__NEW(ncf__idpair, n)) || !(*order = NCF__NEW(int32_t, n))) {
        NCF_FREE(p);
        return ncf__fail(NCF_ERR_NOMEM, "out of memory for the %s id index", what);
    }
    for (k = 0; k < n; k++) p[k].raw = raw[k], p[k].dense = k;
    ncf__sort(p, (size_t)n, sizeof *p, ncf__cmp_idpair);
    for (k = 0; k < n; k++) {
        if (k > 0 && p[k].raw == p[k - 1].raw) {
            int64_t dup = p[k].raw;
            NCF_FREE(p), NCF__DROP(*order);
            return ncf__fail(NCF_ERR_DATA, "raw %s id %s appears twice", what, ncf__i64s(dup, 0));
        }
        (*order)[k] = p[k].dense;
    }
    NCF_FREE(p);
    return NCF_OK;
}

static int ncf__build_id_maps(ncf_model *m)
{
    int rc = ncf__id_order(m->raw_user, m->cfg.num_users, &m->scratch->cache.user_order, "user");
    return rc != NCF_OK ? rc : ncf__id_order(m->raw_item, m->cfg.num_items, &m->scratch->cache.item_order, "item");
}

/* The model's user (items 0) or item (1) ids. */
static ncf__ids ncf__model_ids(const ncf_model *m, int items)
{
    ncf__ids t;
    t.n = items ? m->cfg.num_items : NCF__USERS(m);
    t.num = items ? m->raw_item : m->raw_user;
    t.order = items ? m->scratch->cache.item_order : m->scratch->cache.user_order;
    t.text = items ? m->item_text : m->user_text;
    t.at = items ? m->item_text_at : m->user_text_at;
    return t;
}

static int ncf__has_ids(const ncf_model *m) { return (m->raw_user || m->user_text) && (m->raw_item || m->item_text); }

static int ncf__side_ok(const ncf_model *m, int side, const char *what)
{
    if (!m) return ncf__fail(NCF_ERR_ARG, "%s: NULL model", what);
    if (side != NCF_USER && side != NCF_ITEM)
        return ncf__fail(NCF_ERR_ARG, "%s: side %d is not NCF_USER or NCF_ITEM", what, side);
    return NCF_OK;
}

NCFDEF int ncf_find(const ncf_model *m, int side, const char *id)
{
    int rc = ncf__side_ok(m, side, "ncf_find");
    return rc != NCF_OK ? rc : ncf__index_of(ncf__model_ids(m, side), id, ncf__side_name(side));
}
NCFDEF int ncf_id(const ncf_model *m, int side, int index, char *buf, size_t size)
{
    int rc = ncf__side_ok(m, side, "ncf_id");
    return rc != NCF_OK ? rc : ncf__name_of(ncf__model_ids(m, side), index, buf, size, ncf__side_name(side));
}

/* A user's rated items are a varint stream: each the gap from the one before, minus one.
   The cursor walks it: next is the next rated item, INT32_MAX past the last. */
typedef struct {
    const uint8_t *p, *end;
    int32_t next;
} ncf__rated_cursor;

/* One varint (at most 5 bytes, ending before end) into *v; 0 when malformed. */
static int ncf__get_varint(const uint8_t **p, const uint8_t *end, uint32_t *v)
{
    int shift;
    *v = 0;
    for (shift = 0; shift < 35 && *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        *v |= (uint32_t)(b & 127) << shift;
        if (!(b & 128)) return shift < 28 || b < 16;
    }
    return 0;
}

static int ncf__put_varint(uint8_t *p, uint32_t v)
{
    int n = 0;
    for (; v >= 128; v >>= 7) p[n++] = (uint8_t)(v | 128);
    p[n++] = (uint8_t)v;
    return n;
}

static void ncf__rated_step(ncf__rated_cursor *c)
{
    uint32_t gap;
    if (c->p < c->end && ncf__get_varint(&c->p, c->end, &gap) && (int64_t)c->next + gap + 1 < INT32_MAX)
        c->next += (int32_t)gap + 1;
    else c->next = INT32_MAX, c->p = c->end;
}

/* A cursor at user u's first rated item >= from (none when the model keeps no lists). */
static void ncf__rated_from(ncf__rated_cursor *c, const ncf_model *m, int u, int from)
{
    c->p = c->end = NULL, c->next = -1;
    if (m->rated) c->p = m->rated + m->rated_ptr[u], c->end = m->rated + m->rated_ptr[u + 1];
    do ncf__rated_step(c);
    while (c->next < from);
}

#ifndef NCF_INFERENCE_ONLY
/* User u's rated items, training, test and validation, ascending, as a varint stream into p
   (when not NULL); returns its length in bytes. */
static size_t ncf__encode_rated(const ncf_dataset *d, int u, uint8_t *p)
{
    const int32_t *at[3], *end[3];
    int32_t prev = -1, cur;
    int64_t n0;
    uint8_t tmp[5];
    size_t n = 0;
    int l, lo;
    at[0] = d->items + d->user_ptr[u], end[0] = d->items + d->user_ptr[u + 1];
    at[1] = ncf__held_list(d, NCF_EVAL_TEST, u, &n0), end[1] = at[1] ? at[1] + n0 : NULL;
    at[2] = ncf__held_list(d, NCF_EVAL_VALIDATION, u, &n0), end[2] = at[2] ? at[2] + n0 : NULL;
    for (;;) { /* training, test and validation items: three ascending lists, merged */
        for (l = 0, lo = -1; l < 3; l++)
            if (at[l] < end[l] && (lo < 0 || *at[l] < *at[lo])) lo = l;
        if (lo < 0) return n;
        cur = *at[lo]++;
        n += (size_t)ncf__put_varint(p ? p + n : tmp, (uint32_t)(cur - prev - 1));
        prev = cur;
    }
}

/* A copy of n text ids (text, at), or NULL for none; on failure both NULL. */
static int ncf__copy_text_ids(const char *text, const int64_t *at, int n, char **out, int64_t **out_at)
{
    *out = NULL, *out_at = NULL;
    if (!text) return NCF_OK;
    *out = NCF__NEW(char, at[n] ? at[n] : 1), *out_at = NCF__NEW(int64_t, (size_t)n + 1);
    if (!*out || !*out_at) {
        NCF__DROP(*out), NCF__DROP(*out_at);
        return ncf__fail(NCF_ERR_NOMEM, "out of memory for %d text ids", n);
    }
    memcpy(*out, text, (size_t)at[n]), memcpy(*out_at, at, sizeof(int64_t) * ((size_t)n + 1));
    return NCF_OK;
}

/* The data's ids and rated items, copied into the model in place of its own. */
static int ncf__copy_ids(ncf_model *m, const ncf_dataset *d)
{
    int64_t *ru = NULL, *ri = NULL, *sp, *uat = NULL, *iat = NULL;
    char *ut = NULL, *it = NULL;
    uint8_t *sv;
    int u;
    if (d->raw_user) ru = NCF__NEW(int64_t, d->num_users);
    if (d->raw_item) ri = NCF__NEW(int64_t, d->num_items);
    sp = NCF__NEW(int64_t, (size_t)d->num_users + 1);
    if (sp)
        for (sp[0] = 0, u = 0; u < d->num_users; u++) sp[u + 1] = sp[u] + (int64_t)ncf__encode_rated(d, u, NULL);
    sv = sp ? NCF__NEW(uint8_t, sp[d->num_users]) : NULL;
    if ((d->raw_user && !ru) || (d->raw_item && !ri) || !sp || !sv ||
        ncf__copy_text_ids(d->user_text, d->user_text_at, d->num_users, &ut, &uat) != NCF_OK ||
        ncf__copy_text_ids(d->item_text, d->item_text_at, d->num_items, &it, &iat) != NCF_OK) {
        NCF_FREE(ru);
        NCF_FREE(ri);
        NCF_FREE(sp);
        NCF_FREE(sv);
        NCF_FREE(ut);
        NCF_FREE(uat);
        return ncf__fail(NCF_ERR_NOMEM, "out of memory for the id maps");
    }
    if (ru) memcpy(ru, d->raw_user, sizeof(int64_t) * (size_t)d->num_users);
    if (ri) memcpy(ri, d->raw_item, sizeof(int64_t) * (size_t)d->num_items);
    for (u = 0; u < d->num_users; u++) ncf__encode_rated(d, u, sv + sp[u]);
    NCF_FREE(m->raw_user), NCF_FREE(m->raw_item), NCF_FREE(m->rated_ptr), NCF_FREE(m->rated);
    NCF_FREE(m->user_text), NCF_FREE(m->item_text), NCF_FREE(m->user_text_at), NCF_FREE(m->item_text_at);
    m->raw_user = ru, m->raw_item = ri, m->rated_ptr = sp, m->rated = sv;
    m->user_text = ut, m->user_text_at = uat, m->item_text = it, m->item_text_at = iat;
    return NCF_OK;
}

NCFDEF int ncf_model_set_ids(ncf_model *m, const ncf_dataset *d)
{
    int rc;
    if (!m || !d || (!d->raw_user && !d->user_text) || (!d->raw_item && !d->item_text))
        return ncf__fail(NCF_ERR_ARG, "ncf_model_set_ids: NULL argument, or a dataset without ids");
    if ((rc = ncf__writable(m, "ncf_model_set_ids")) != NCF_OK) return rc;
    if (d->num_users != m->cfg.num_users || d->num_items != m->cfg.num_items)
        return ncf__fail(NCF_ERR_ARG, "ncf_model_set_ids: the data has %d users and %d items, the model %d and %d",
                         d->num_users, d->num_items, m->cfg.num_users, m->cfg.num_items);
    if ((rc = ncf__copy_ids(m, d)) != NCF_OK) return rc;
    ncf__refresh_cache(m); /* the model is about to serve */
    return ncf__build_id_maps(m);
}

#endif

/* ---- >>serving: top-k by heap, workspaces, predict and recommend by id ----------------------- */
/* The index of user id raw_user, into *u (checked: a model with ids, the id known). */
static int ncf__user_of(const ncf_model *m, int64_t raw_user, int *u)
{
    ncf__ids users = ncf__model_ids(m, 0);
    if (!ncf__has_ids(m)) return ncf__fail(NCF_ERR_ARG, "the model has no id maps (ncf_model_set_ids)");
    if (NCF__MPI_STALE(m)) return ncf__fail(NCF_ERR_ARG, "serving: " NCF__STALE_TEXT);
    if ((*u = ncf__ids_find_int(&users, raw_user)) < 0)
        return ncf__fail(NCF_ERR_ARG, "unknown user %s (a new user is folded in from its items: ncf_fold_in)",
                         ncf__i64s(raw_user, 0));
    return NCF_OK;
}

/* The same, and the index of item id raw_item into *i. */
static int ncf__indices_of(const ncf_model *m, int64_t raw_user, int64_t raw_item, int *u, int *i)
{
    ncf__ids items = ncf__model_ids(m, 1);
    int rc = ncf__user_of(m, raw_user, u);
    if (rc == NCF_OK && (*i = ncf__ids_find_int(&items, raw_item)) < 0)
        return ncf__fail(NCF_ERR_ARG, "unknown item %s", ncf__i64s(raw_item, 0));
    return rc;
}

/* Candidates as (score, item): the order of ncf_recommend, ties to the lower item, and a
   non-finite score last. */
typedef struct {
    float score;
    int32_t item;
} ncf__cand;

/* A score as it ranks: a non-finite one below every finite one, and equal to the others. */
static float ncf__rank(float score) { return NCF__NONFINITE(score) ? -INFINITY : score; }

static int ncf__better(ncf__cand a, ncf__cand b)
{
    float x = ncf__rank(a.score), y = ncf__rank(b.score);
    return x > y || (x == y && a.item < b.item);
}

/* A bounded heap of the k best candidates so far, the worst at the root. */
static void ncf__heap_down(ncf__cand *h, int n, int q)
{
    for (;;) {
        int w = q, c = 2 * q + 1;
        ncf__cand t;
        if (c < n && ncf__better(h[w], h[c])) w = c;
        if (c + 1 < n && ncf__better(h[w], h[c + 1])) w = c + 1;
        if (w == q) return;
        t = h[q], h[q] = h[w], h[w] = t;
        q = w;
    }
}

static void ncf__heap_offer(ncf__cand *h, int *n, int k, ncf__cand c)
{
    int q = (*n)++;
    if (q < k) {
        h[q] = c;
        while (q > 0 && ncf__better(h[(q - 1) / 2], h[q])) {
            ncf__cand t = h[q];
            h[q] = h[(q - 1) / 2], h[(q - 1) / 2] = t;
            q = (q - 1) / 2;
        }
    } else {
        *n = k;
        if (ncf__better(c, h[0])) h[0] = c, ncf__heap_down(h, k, 0);
    }
}

/* A recommendation's work: whom it scores, which candidates, which of them it skips. */
typedef struct {
    const ncf_model *m;
    const float *proj;    /* the cached item projection, or NULL */
    int u;                /* the user's index, or -1 for a user given by its rows */
    const float *urow;    /* the user's rows when given (ncf_fold_in), else the model's */
    const int32_t *allow; /* sorted, each once: the only candidates; NULL: every item */
    int ncand;            /* candidates: the allow-list's, or the catalogue's */
    const int32_t *deny;  /* sorted: never recommended */
    int ndeny;
    int exclude_rated; /* skip u's rated items */
    int k;
    int threads; /* 1: the library's threads may share the catalogue; 0: the calling thread */
} ncf__rec_job;

/* What a job skips, walked in ascending item order: u's rated items and the deny-list. */
typedef struct {
    ncf__rated_cursor rated;
    const int32_t *deny, *deny_end;
} ncf__skipper;

static void ncf__skipper_at(ncf__skipper *k, const ncf__rec_job *J, int32_t from)
{
    int lo;
    k->rated.p = k->rated.end = NULL, k->rated.next = INT32_MAX;
    if (J->exclude_rated && J->u >= 0) ncf__rated_from(&k->rated, J->m, J->u, from);
    NCF__FIRST_NOT(int, lo, J->ndeny, J->deny[mid] < from);
    k->deny = k->deny_end = J->deny; /* (NULL without a deny-list) */
    if (J->deny) k->deny += lo, k->deny_end += J->ndeny;
}

static int ncf__skips(ncf__skipper *k, int32_t item)
{
    while (k->rated.next < item) ncf__rated_step(&k->rated);
    while (k->deny < k->deny_end && *k->deny < item) k->deny++;
    return k->rated.next == item || (k->deny < k->deny_end && *k->deny == item);
}

/* The candidates at positions [p0, p1) of the job (items, or allow-list entries), less those
   it skips, scored into the heap of its k best: a chunk at a time, scored whole, the skipped
   ones dropped after (the skips walk up the chunk as the candidates do). */
static void ncf__rec_range(const ncf__rec_job *J, int p0, int p1, ncf__eval_buf *e, ncf__cand *heap, int *nh)
{
    ncf__skipper sk;
    ncf__cand x;
    int p, j, n, C = ncf__score_chunk(J->m);
    float worst; /* the heap's worst score when it is full and finite, else -inf */
    if (p0 >= p1 || J->k <= 0) return;
    worst = *nh == J->k && !NCF__NONFINITE(heap[0].score) ? heap[0].score : -INFINITY;
    ncf__skipper_at(&sk, J, J->allow ? J->allow[p0] : p0);
    for (p = p0; p < p1; p += n) {
        const int32_t *cand = J->allow ? J->allow + p : NULL;
        n = p1 - p > C ? C : p1 - p;
        ncf__score_user(J->m, J->proj, J->u, J->urow, cand, p, n, e, p > p0);
        for (j = 0; j < n; j++) { /* (most items score below the heap's worst: that test first) */
            x.score = e->sc[j], x.item = cand ? cand[j] : p + j;
            if (x.score < worst || !(*nh < J->k || ncf__better(x, heap[0])) || ncf__skips(&sk, x.item)) continue;
            ncf__heap_offer(heap, nh, J->k, x);
            worst = *nh == J->k && !NCF__NONFINITE(heap[0].score) ? heap[0].score : -INFINITY;
        }
    }
}

/* The heap's n best, best first, as item indices (items) or into the int64 slots of ids
   (which the caller then turns into ids), with their scores. Returns n. */
static int ncf__heap_out(ncf__cand *best, int n, int32_t *items, int64_t *ids, float *out_scores)
{
    int j;
    for (j = n - 1; j >= 0; j--) { /* worst first, into the tail */
        if (items) items[j] = best[0].item;
        else ids[j] = best[0].item;
        if (out_scores) out_scores[j] = best[0].score;
        best[0] = best[j];
        ncf__heap_down(best, j, 0);
    }
    return n;
}

/* Item indices in ids[0..n) to their integer ids. */
static void ncf__indices_to_ids(const ncf_model *m, int64_t *ids, int n)
{
    int j;
    for (j = 0; j < n; j++) ids[j] = m->raw_item[ids[j]];
}

/* A serving workspace: scoring buffers for a chunk of items, then a heap of k candidates,
   from a 64-byte boundary; its size is a multiple of 64 bytes. */
/* Bytes of scoring buffers and a heap of k: the workspace of one user's top k. */
static size_t ncf__score_workspace(const ncf_model *m, int k)
{
    ncf__eval_buf e;
    if (!m) return 0;
    k = k < 1 ? 1 : k > m->cfg.num_items ? m->cfg.num_items : k; /* (k candidates of 2 floats each) */
    return sizeof(float) *
        (ncf__eval_buf_carve(&e, m, ncf__score_chunk(m), NULL) + ncf__round_floats((size_t)k * 2) + NCF__ALIGN_FLOATS);
}

/* The scoring buffers and the heap carved from work (ncf__score_workspace bytes at least). */
static void ncf__carve_workspace(const ncf_model *m, void *work, ncf__eval_buf *e, ncf__cand **heap)
{
    work = (char *)work + (size_t)(-(intptr_t)work & 63);
    *heap = (ncf__cand *)((float *)work + ncf__eval_buf_carve(e, m, ncf__score_chunk(m), (float *)work));
}

static int ncf__workspace(const ncf_model *m, int k, void *work, size_t size, ncf__eval_buf *e, ncf__cand **heap)
{
    size_t need = ncf__score_workspace(m, k);
    if (!work || size < need)
        return ncf__fail(NCF_ERR_ARG, "workspace of %lu bytes; this model and k = %d need %lu (ncf_rec_workspace_size)",
                         (unsigned long)(work ? size : 0), k, (unsigned long)need);
    ncf__carve_workspace(m, work, e, heap);
    return NCF_OK;
}

/* The job of user u over the catalogue, no lists. */
static void ncf__plain_job(ncf__rec_job *J, const ncf_model *m, int u, int k, int exclude)
{
    memset(J, 0, sizeof *J);
    J->m = m, J->proj = ncf__cached_projection(m), J->u = u, J->ncand = m->cfg.num_items;
    J->exclude_rated = exclude, J->k = k < m->cfg.num_items ? k : m->cfg.num_items, J->threads = 0;
}

/* Pair by pair through the serving path: how ncf_predict_index scores an int8 model read
   in place, whose rows the training forward cannot gather. */
static int ncf__score_pairs(const ncf_model *m, const int32_t *users, const int32_t *items, int n, float *logits)
{
    size_t size = ncf__score_workspace(m, 1);
    void *work = NCF_MALLOC(size);
    ncf__eval_buf e;
    ncf__cand *heap = NULL;
    int j;
    if (!work) return ncf__fail(NCF_ERR_NOMEM, "out of memory for a %lu-byte workspace", (unsigned long)size);
    ncf__workspace(m, 1, work, size, &e, &heap);
    for (j = 0; j < n; j++) {
        ncf__score_user(m, NULL, users[j], NULL, items + j, 0, 1, &e, 0);
        logits[j] = e.sc[0];
    }
    NCF_FREE(work);
    return NCF_OK;
}

NCFDEF int ncf_predict(const ncf_model *m, int64_t raw_user, int64_t raw_item, float *logit)
{
    size_t size = m ? ncf__score_workspace(m, 1) : 0;
    void *work;
    ncf__eval_buf e;
    ncf__cand *heap = NULL;
    int u = 0, i = 0, rc;
    int32_t ii;
    if (!m || !logit) return ncf__fail(NCF_ERR_ARG, "ncf_predict: NULL argument");
    if ((rc = ncf__indices_of(m, raw_user, raw_item, &u, &i)) != NCF_OK) return rc;
    if (!(work = NCF_MALLOC(size)))
        return ncf__fail(NCF_ERR_NOMEM, "out of memory for a %lu-byte workspace", (unsigned long)size);
    ncf__workspace(m, 1, work, size, &e, &heap);
    ii = i;
    ncf__score_user(m, ncf__cached_projection(m), u, NULL, &ii, 0, 1, &e, 0);
    *logit = e.sc[0];
    NCF_FREE(work);
    return NCF_OK;
}

#if NCF__TEAMS
/* A job's best k, its candidates scored in chunks on all threads, each keeping the best k of
   the chunks it scored, merged at the end: into items (indices) or ids (indices, for the
   caller to turn into ids). The k best do not depend on who scored what: candidates order
   totally (score, then index), and each score is the same in any chunk. */
static int ncf__recommend_threads(const ncf__rec_job *J, int32_t *items, int64_t *ids, float *scores)
{
    const ncf_model *m = J->m;
    ncf__cand *best, **heaps;
    ncf__team team = NCF__TEAM_INIT;
    char *block;
    size_t size;
    int j, n = 0, k = J->k > 0 ? J->k : 1, T = ncf__threads(), *nh, par, C = ncf__score_chunk(m);
    int64_t chunks = NCF__CEIL_DIV(J->ncand, C);
    par = J->threads && T > 1 && chunks > 1 && (float)J->ncand * ncf__row_macs(m) > 16 * NCF__PAR_WORK;
    T = !par ? 1 : chunks < T ? (int)chunks : T; /* workspaces for the threads that can run only */
    size = ncf__score_workspace(m, k);
    /* T workspaces, then where each thread's heap is, the merged heap and the heaps' sizes */
    block = (char *)ncf__alloc((size_t)T, size + sizeof(ncf__cand *) + sizeof(int) + sizeof(ncf__cand) * (size_t)k);
    if (!block) return ncf__fail(NCF_ERR_NOMEM, "out of memory for the top %d of %d items", k, m->cfg.num_items);
    heaps = (ncf__cand **)(block + (size_t)T * size), best = (ncf__cand *)(heaps + T), nh = (int *)(best + k);
    for (j = 0; j < T; j++) nh[j] = 0;
    NCF__PARALLEL_N(par, T)
    {
        ncf__ctx x = ncf__join(&team);
        ncf__eval_buf e;
        int t = 0;
        int64_t lo, hi;
#if NCF__TEAMS
        t = omp_get_thread_num();
#endif
        if (t < T && ncf__workspace(m, k, block + (size_t)t * size, size, &e, &heaps[t]) == NCF_OK)
            while (ncf__claim(&x, chunks, 1, &lo, &hi))
                ncf__rec_range(J, (int)(lo * C), hi * C < J->ncand ? (int)(hi * C) : J->ncand, &e, heaps[t], &nh[t]);
    }
    for (j = 0; j < T; j++) {
        int q;
        for (q = 0; q < nh[j]; q++) ncf__heap_offer(best, &n, k, heaps[j][q]);
    }
    n = J->k > 0 ? ncf__heap_out(best, n, items, ids, scores) : 0;
    NCF_FREE(block);
    return n;
}
#endif

/* ---- >>serving-options: allow- and deny-lists, many users, a user given by its rows ---------- */

/* The defaults, field by field: the 10 best, the rated items skipped, no lists, logits, the
   heap, the calling thread. What NULL options mean in every call. */
static const ncf_rec_opts ncf__rec_defaults = {10, 1, NULL, 0, NULL, 0, NULL, 0, NULL, 0, 0};

NCFDEF ncf_rec_opts ncf_rec_opts_default(void) { return ncf__rec_defaults; }

/* list[0..n) of item indices checked, sorted into out, duplicates dropped; the count kept. */
static int ncf__sorted_items(const ncf_model *m, const int32_t *list, int n, int32_t *out, const char *what)
{
    int j, w = 0;
    for (j = 0; j < n; j++) {
        if (list[j] < 0 || list[j] >= m->cfg.num_items)
            return ncf__fail(NCF_ERR_ARG,
                             "ncf_recommend: %s[%d] = %d is not an item index in [0, %d) (ncf_find finds an id's)",
                             what, j, (int)list[j], m->cfg.num_items);
        out[j] = list[j];
    }
    ncf__heap_sort((char *)out, (size_t)n, sizeof *out, ncf__cmp_i32); /* (in place: serving allocates nothing) */
    for (j = 0; j < n; j++)
        if (w == 0 || out[j] != out[w - 1]) out[w++] = out[j];
    return w;
}

/* Bytes of the lists' sorted copies in a workspace. */
static size_t ncf__lists_bytes(const ncf_rec_opts *o)
{
    size_t na = o->allow && o->num_allow > 0 ? (size_t)o->num_allow : 0,
           nd = o->deny && o->num_deny > 0 ? (size_t)o->num_deny : 0;
    return sizeof(float) * ncf__round_floats(na + nd + 1);
}

static int ncf__item_vec_dim(const ncf_model *m); /* similar: an item's vector */

/* The workspace before the lists: ncf_recommend_index's, or ncf_similar's (the k best, and
   three vectors) where that is larger. */
static size_t ncf__rec_base(const ncf_model *m, int k)
{
    int D = ncf__item_vec_dim(m), H = m->scratch->H,
        most = m->cfg.num_items > m->cfg.num_users ? m->cfg.num_items : m->cfg.num_users;
    size_t best = (size_t)(k < 1 ? 1 : k < most ? k : most);
    size_t similar = sizeof(float) *
        (ncf__round_floats(best * sizeof(ncf__cand) / sizeof(float)) +
         ncf__round_floats((size_t)3 * (size_t)(D > H ? D : H)) + NCF__ALIGN_FLOATS);
    size_t rec = ncf__score_workspace(m, k);
    return rec > similar ? rec : similar;
}

NCFDEF size_t ncf_rec_workspace_size(const ncf_model *m, const ncf_rec_opts *o)
{
    if (!o) o = &ncf__rec_defaults;
    return m ? ncf__rec_base(m, o->k) + ncf__lists_bytes(o) : 0;
}

/* Checks the options for user index u (or o->user_row) and makes the job; the lists' sorted
   copies go to lists (room for num_allow + num_deny). */
/* The options' own values, checked before anything is sized from them. */
static int ncf__check_rec_opts(const ncf_rec_opts *o, const char *what)
{
    if (!o) return ncf__fail(NCF_ERR_ARG, "%s: NULL options", what);
    if (o->k <= 0) return ncf__fail(NCF_ERR_ARG, "%s: k %d: need k > 0", what, o->k);
    if (o->num_allow < 0 || o->num_deny < 0)
        return ncf__fail(NCF_ERR_ARG, "%s: num_allow %d, num_deny %d: need list sizes >= 0", what, o->num_allow,
                         o->num_deny);
    if (o->exclude_rated != 0 && o->exclude_rated != 1)
        return ncf__fail(NCF_ERR_ARG, "%s: exclude_rated %d is neither 0 nor 1", what, o->exclude_rated);
    if (o->probabilities != 0 && o->probabilities != 1)
        return ncf__fail(NCF_ERR_ARG, "%s: probabilities %d is neither 0 nor 1", what, o->probabilities);
    if (o->threads != 0 && o->threads != 1)
        return ncf__fail(NCF_ERR_ARG, "%s: threads %d is neither 0 nor 1", what, o->threads);
    return NCF_OK;
}

static int ncf__rec_job_of(const ncf_model *m, int u, const ncf_rec_opts *o, int32_t *lists, ncf__rec_job *J,
                           const char *what)
{
    int rc;
    if ((rc = ncf__check_rec_opts(o, what)) != NCF_OK) return rc;
    if (!o->user_row && (u < 0 || u >= m->cfg.num_users))
        return ncf__fail(NCF_ERR_ARG, "%s: user index %d is not in [0, %d) (an index, not an id: ncf_find)", what, u,
                         m->cfg.num_users);
    if (NCF__MPI_STALE(m)) return ncf__fail(NCF_ERR_ARG, "serving: " NCF__STALE_TEXT);
    ncf__plain_job(J, m, o->user_row ? -1 : u, o->k, o->exclude_rated);
    J->urow = o->user_row, J->threads = o->threads;
    if (o->allow) {
        if ((rc = ncf__sorted_items(m, o->allow, o->num_allow, lists, "allow")) < 0) return rc;
        J->allow = lists, J->ncand = rc, lists += rc;
    }
    if (o->deny) {
        if ((rc = ncf__sorted_items(m, o->deny, o->num_deny, lists, "deny")) < 0) return rc;
        J->deny = lists, J->ndeny = rc;
    }
    return NCF_OK;
}

/* Logits to probabilities, in place (ncf_rec_opts.probabilities). */
static void ncf__sigmoid_all(float *x, int n)
{
    int j;
    for (j = 0; x && j < n; j++) x[j] = 1.0f / (1.0f + expf(-x[j]));
}

/* User index u's best (or o->user_row's): as item indices (items) or as indices for the
   caller to turn into ids (ids). On this thread in the caller's workspace, or in one from the
   heap; or, asked to, shared by the library's threads. */
static int ncf__recommend(const ncf_model *m, int u, const ncf_rec_opts *o, int32_t *items, int64_t *ids, float *scores,
                          const char *what)
{
    size_t base = ncf__rec_base(m, o->k), need = base + ncf__lists_bytes(o); /* (ncf_rec_workspace_size) */
    void *work = o->work;
    ncf__eval_buf e;
    ncf__cand *heap = NULL;
    ncf__rec_job J;
    int n = 0, rc;
#if NCF__TEAMS
    if (!work && o->threads && ncf__threads() > 1) {
        int32_t *lists = (int32_t *)NCF_MALLOC(ncf__lists_bytes(o));
        if (!lists) return ncf__fail(NCF_ERR_NOMEM, "out of memory for the allow- and deny-lists");
        n = ncf__rec_job_of(m, u, o, lists, &J, what);
        if (n == NCF_OK) n = ncf__recommend_threads(&J, items, ids, scores);
        NCF_FREE(lists);
        if (n > 0 && o->probabilities) ncf__sigmoid_all(scores, n);
        return n;
    }
#endif
    if (work && o->work_size < need)
        return ncf__fail(NCF_ERR_ARG,
                         "%s: workspace of %lu bytes; this model and these options need %lu "
                         "(ncf_rec_workspace_size)",
                         what, (unsigned long)o->work_size, (unsigned long)need);
    if (!work && !(work = NCF_MALLOC(need)))
        return ncf__fail(NCF_ERR_NOMEM, "out of memory for a %lu-byte workspace", (unsigned long)need);
    ncf__carve_workspace(m, work, &e, &heap); /* (base holds it: need >= base) */
    rc = ncf__rec_job_of(m, u, o, (int32_t *)(((uintptr_t)work + base + 3) & ~(uintptr_t)3), &J, what);
    if (rc == NCF_OK) {
        ncf__rec_range(&J, 0, J.ncand, &e, heap, &n);
        n = ncf__heap_out(heap, n, items, ids, scores);
    }
    if (work != o->work) NCF_FREE(work);
    if (n > 0 && o->probabilities) ncf__sigmoid_all(scores, n);
    return rc != NCF_OK ? rc : n;
}

NCFDEF int ncf_recommend_index(const ncf_model *m, int u, const ncf_rec_opts *o, int32_t *items, float *scores)
{
    if (!m || !items) return ncf__fail(NCF_ERR_ARG, "ncf_recommend_index: NULL model or output");
    return ncf__recommend(m, u, o ? o : &ncf__rec_defaults, items, NULL, scores, "ncf_recommend_index");
}

NCFDEF int ncf_recommend(const ncf_model *m, int64_t user, const ncf_rec_opts *o, int64_t *items, float *scores)
{
    int u = -1, rc, n;
    if (!m || !items) return ncf__fail(NCF_ERR_ARG, "ncf_recommend: NULL model or output");
    if (m->item_text)
        return ncf__fail(NCF_ERR_ARG,
                         "ncf_recommend: this model's item ids are text, not integers: ncf_recommend_index gives "
                         "item indices, ncf_id their ids");
    if (!o) o = &ncf__rec_defaults;
    if (!o->user_row && (rc = ncf__user_of(m, user, &u)) != NCF_OK) return rc;
    n = ncf__recommend(m, u, o, NULL, items, scores, "ncf_recommend");
    if (n > 0) ncf__indices_to_ids(m, items, n);
    return n;
}

NCFDEF int ncf_recommend_users(const ncf_model *m, const int32_t *users, int n, const ncf_rec_opts *opts,
                               int32_t *items, float *scores, int *counts)
{
    const ncf_rec_opts *o = opts ? opts : &ncf__rec_defaults;
    ncf__rec_job J;
    ncf__team team = NCF__TEAM_INIT;
    size_t size;
    char *block;
    int32_t *lists;
    int rc, j, T = ncf__threads(), failed = 0;
    if (!m || !items || !counts || n < 0 || o->user_row || o->work)
        return ncf__fail(NCF_ERR_ARG,
                         "ncf_recommend_users: need a model, options (without user_row or work), outputs "
                         "and n >= 0");
    for (j = 0; users && j < n; j++)
        if (users[j] < 0 || users[j] >= m->cfg.num_users)
            return ncf__fail(NCF_ERR_ARG, "ncf_recommend_users: users[%d] = %d is not a user index in [0, %d)", j,
                             (int)users[j], m->cfg.num_users);
    if (!users && n > m->cfg.num_users)
        return ncf__fail(NCF_ERR_ARG, "ncf_recommend_users: %d users asked for; the model has %d", n, m->cfg.num_users);
    if ((rc = ncf__check_rec_opts(o, "ncf_recommend_users")) != NCF_OK) return rc;
    T = T > 1 && n > 1 ? (n < T ? n : T) : 1; /* workspaces for the threads that can run only */
    size = ncf__score_workspace(m, o->k);
    lists = (int32_t *)NCF_MALLOC(ncf__lists_bytes(o));
    block = (char *)ncf__alloc((size_t)T, size);
    if (!lists || !block) {
        NCF_FREE(lists), NCF_FREE(block);
        return ncf__fail(NCF_ERR_NOMEM, "out of memory for %d workspaces", T);
    }
    if ((rc = ncf__rec_job_of(m, users && n > 0 ? users[0] : 0, o, lists, &J, "ncf_recommend_users")) != NCF_OK ||
        n == 0) {
        NCF_FREE(lists), NCF_FREE(block);
        return rc;
    }
    NCF__PARALLEL_N(T > 1, T)
    { /* a user at a time, each on one thread, in the same order as alone: the same answers */
        ncf__ctx x = ncf__join(&team);
        ncf__eval_buf e;
        ncf__cand *heap = NULL;
        ncf__rec_job Ju = J;
        int t = 0, q, nh;
        int64_t lo, hi, i;
#if NCF__TEAMS
        t = omp_get_thread_num();
#endif
        if (t >= T || ncf__workspace(m, o->k, block + (size_t)t * size, size, &e, &heap) != NCF_OK) failed = 1;
        else
            while (ncf__claim(&x, n, 1, &lo, &hi))
                for (i = lo; i < hi; i++) {
                    Ju.u = users ? users[i] : (int)i, nh = 0;
                    ncf__rec_range(&Ju, 0, Ju.ncand, &e, heap, &nh);
                    counts[i] = ncf__heap_out(heap, nh, items + (size_t)i * (size_t)o->k, NULL,
                                              scores ? scores + (size_t)i * (size_t)o->k : NULL);
                    if (o->probabilities && scores) ncf__sigmoid_all(scores + (size_t)i * (size_t)o->k, counts[i]);
                    for (q = counts[i]; q < o->k; q++) items[(size_t)i * (size_t)o->k + q] = -1;
                }
    }
    NCF_FREE(lists), NCF_FREE(block);
    return failed ? ncf__fail(NCF_ERR_NOMEM, "ncf_recommend_users: a thread found no workspace") : NCF_OK;
}

/* The logits of n items for user index u, or for the user rows urow when given. */
static int ncf__predict_items(const ncf_model *m, int u, const float *urow, const int32_t *items, int n, float *logits)
{
    size_t size;
    void *work;
    ncf__eval_buf e;
    ncf__cand *heap = NULL;
    int j;
    if (!m || !items || !logits || n < 0) return ncf__fail(NCF_ERR_ARG, "ncf_predict_for: NULL argument or n < 0");
    if (!urow && (u < 0 || u >= m->cfg.num_users))
        return ncf__fail(NCF_ERR_ARG, "ncf_predict_for: user index %d is not in [0, %d)", u, m->cfg.num_users);
    for (j = 0; j < n; j++)
        if (items[j] < 0 || items[j] >= m->cfg.num_items)
            return ncf__fail(NCF_ERR_ARG, "ncf_predict_for: items[%d] = %d is not an item index", j, (int)items[j]);
    size = ncf__score_workspace(m, 1);
    if (!(work = NCF_MALLOC(size)))
        return ncf__fail(NCF_ERR_NOMEM, "out of memory for a %lu-byte workspace", (unsigned long)size);
    ncf__workspace(m, 1, work, size, &e, &heap);
    for (j = 0; j < n; j += ncf__score_chunk(m)) {
        int c = n - j < ncf__score_chunk(m) ? n - j : ncf__score_chunk(m);
        ncf__score_user(m, ncf__cached_projection(m), urow ? -1 : u, urow, items + j, 0, c, &e, j > 0);
        memcpy(logits + j, e.sc, sizeof(float) * (size_t)c);
    }
    NCF_FREE(work);
    return NCF_OK;
}

/* ---- >>similar: similar items and users by cosine ------------------------------------------- */
/* A user's or an item's vector for similarity, D floats: what a score is linear in. MF: its
   factors; GMF and NeuMF: its GMF factors weighted by the output layer's (the GMF half of NeuMF:
   the MLP half of a NeuMF score is not a product of a user's and an item's vectors, so it has
   no such similarity); MLP: its half of the first dense layer (W1 p_u or W1 q_i: what the
   tower sees of it). Side 0 users, 1 items. */
static int ncf__item_vec_dim(const ncf_model *m) { return m->scratch->F ? m->scratch->F : m->cfg.layers[1]; }

static void ncf__side_vec(const ncf_model *m, int side, int i, float *tmp, float *v)
{
    const struct ncf__scratch *s = m->scratch;
    int d, D = ncf__item_vec_dim(m);
    if (s->F) {
        const float *q = ncf__emb_row(&s->tables.tab[s->tables.gmf], side, i, tmp);
        for (d = 0; d < D; d++) v[d] = s->tables.gmf_weights[d] * q[d];
        return;
    }
    {
        const float *proj = side ? ncf__proj_row_major(m, ncf__cached_projection(m)) : NULL, *r;
        if (proj) {
            memcpy(v, proj + (size_t)i * D, sizeof(float) * (size_t)D);
            return;
        }
        r = ncf__emb_row(&s->tables.tab[s->tables.mlp], side, i, tmp);
        ncf__gemm_rows(v, D, r, 0, 1, m->w[1] + (size_t)side * s->H * D, D, NULL, 0, 1, D, s->H, 0);
    }
}

static float ncf__norm(const float *v, int n)
{
    float a = 0.0f;
    int d;
    for (d = 0; d < n; d++) a += v[d] * v[d];
    return sqrtf(a);
}

/* The k users (side 0) or items (1) most like index i, among the candidates of J (every one of
   the side without lists), into out; heap and v (3 vectors) are the caller's. */
static int ncf__similar(const ncf_model *m, int side, int i, const ncf__rec_job *J, ncf__cand *heap, float *v,
                        int32_t *out, float *scores)
{
    int D = ncf__item_vec_dim(m), n = 0, d;
    float *w = v + D, *tmp = w + D, nv;
    ncf__skipper sk;
    int64_t p;
    ncf__cand x;
    ncf__skipper_at(&sk, J, J->allow ? (J->ncand ? J->allow[0] : 0) : 0);
    ncf__side_vec(m, side, i, tmp, v);
    nv = ncf__norm(v, D);
    for (p = 0; p < J->ncand; p++) {
        int32_t j = J->allow ? J->allow[p] : (int32_t)p;
        float dot = 0.0f, nw;
        if (j == i || ncf__skips(&sk, j)) continue;
        ncf__side_vec(m, side, j, tmp, w);
        for (d = 0; d < D; d++) dot += v[d] * w[d];
        nw = ncf__norm(w, D);
        x.score = nv > 0.0f && nw > 0.0f ? dot / (nv * nw) : 0.0f, x.item = j;
        ncf__heap_offer(heap, &n, J->k, x);
    }
    return ncf__heap_out(heap, n, out, NULL, scores);
}

/* The buffers of a similarity call: in the caller's workspace (the k best, three vectors, then
   the lists where recommend has them), or from the heap (*own set). */
static int ncf__similar_buffers(const ncf_model *m, const ncf_rec_opts *o, int best, ncf__cand **heap, float **v,
                                int32_t **lists, int *own, const char *what)
{
    int D = ncf__item_vec_dim(m), H = m->scratch->H;
    *own = !o->work;
    if (o->work) {
        size_t need = ncf_rec_workspace_size(m, o), base = ncf__rec_base(m, o->k);
        char *at = (char *)o->work + (size_t)(-(intptr_t)o->work & 63);
        if (o->work_size < need)
            return ncf__fail(NCF_ERR_ARG,
                             "%s: workspace of %lu bytes; this model and these options need %lu "
                             "(ncf_rec_workspace_size)",
                             what, (unsigned long)o->work_size, (unsigned long)need);
        *heap = (ncf__cand *)(void *)at;
        *v =
            (float *)(void *)(at + sizeof(float) * ncf__round_floats((size_t)best * sizeof(ncf__cand) / sizeof(float)));
        *lists = (int32_t *)(((uintptr_t)o->work + base + 3) & ~(uintptr_t)3);
        return NCF_OK;
    }
    *lists = (int32_t *)NCF_MALLOC(ncf__lists_bytes(o));
    *heap = NCF__NEW(ncf__cand, best);
    *v = NCF__NEW(float, (size_t)3 * (D > H ? D : H));
    if (*lists && *heap && *v) return NCF_OK;
    NCF__DROP(*lists), NCF__DROP(*heap), NCF__DROP(*v);
    return ncf__fail(NCF_ERR_NOMEM, "%s: out of memory", what);
}

static int ncf__similar_items(const ncf_model *m, int item, const ncf_rec_opts *o, int32_t *items, float *scores)
{
    ncf__rec_job J;
    ncf__cand *heap;
    float *v;
    int32_t *lists;
    int rc, own;
    if (!m || !o || !items || o->user_row)
        return ncf__fail(NCF_ERR_ARG, "ncf_similar: need a model, options (no user_row) and an output");
    if ((rc = ncf__check_rec_opts(o, "ncf_similar")) != NCF_OK) return rc;
    if (item < 0 || item >= m->cfg.num_items)
        return ncf__fail(NCF_ERR_ARG, "ncf_similar: item index %d is not in [0, %d) (ncf_find finds an id's)", item,
                         m->cfg.num_items);
    rc = ncf__similar_buffers(m, o, o->k < m->cfg.num_items ? o->k : m->cfg.num_items, &heap, &v, &lists, &own,
                              "ncf_similar");
    if (rc != NCF_OK) return rc;
    if ((rc = ncf__rec_job_of(m, 0, o, lists, &J, "ncf_similar")) == NCF_OK)
        J.exclude_rated = 0, J.u = -1, rc = ncf__similar(m, 1, item, &J, heap, v, items, scores);
    if (own) NCF_FREE(lists), NCF_FREE(heap), NCF_FREE(v);
    return rc;
}

static int ncf__similar_users(const ncf_model *m, int user, const ncf_rec_opts *o, int32_t *users, float *scores)
{
    ncf__rec_job J;
    ncf__cand *heap;
    float *v;
    int32_t *lists;
    int rc, own;
    if (!m || !o || !users || o->user_row || o->allow || o->deny)
        return ncf__fail(NCF_ERR_ARG,
                         "ncf_similar: need a model, options (no user_row, allow or deny) and an "
                         "output");
    if ((rc = ncf__check_rec_opts(o, "ncf_similar")) != NCF_OK) return rc;
    if (user < 0 || user >= m->cfg.num_users)
        return ncf__fail(NCF_ERR_ARG, "ncf_similar: user index %d is not in [0, %d) (ncf_find finds an id's)", user,
                         m->cfg.num_users);
    rc = ncf__similar_buffers(m, o, o->k < m->cfg.num_users ? o->k : m->cfg.num_users, &heap, &v, &lists, &own,
                              "ncf_similar");
    if (rc != NCF_OK) return rc;
    memset(&J, 0, sizeof J);
    J.m = m, J.u = -1, J.ncand = m->cfg.num_users, J.k = o->k < m->cfg.num_users ? o->k : m->cfg.num_users;
    rc = ncf__similar(m, 0, user, &J, heap, v, users, scores);
    if (own) NCF_FREE(lists), NCF_FREE(heap), NCF_FREE(v);
    return rc;
}

NCFDEF int ncf_similar(const ncf_model *m, int side, int index, const ncf_rec_opts *o, int32_t *out, float *scores)
{
    int rc = ncf__side_ok(m, side, "ncf_similar");
    if (rc != NCF_OK) return rc;
    return side == NCF_ITEM ? ncf__similar_items(m, index, o ? o : &ncf__rec_defaults, out, scores)
                            : ncf__similar_users(m, index, o ? o : &ncf__rec_defaults, out, scores);
}

/* ---- >>by-id: serving calls that speak ids ------------------------------------------------ */

/* items[0..n) as ids, each NUL-terminated, one after another in ids: n, or NCF_ERR_ARG. */
static int ncf__ids_out(const ncf_model *m, const int32_t *items, int n, char *ids, size_t size, const char *what)
{
    size_t at = 0;
    int j, len;
    for (j = 0; j < n; j++, at += (size_t)len + 1)
        if ((len = ncf_id(m, NCF_ITEM, items[j], ids + at, size - at)) < 0)
            return ncf__fail(NCF_ERR_ARG, "%s: %lu bytes hold %d of the %d ids (k * (NCF_MAX_ID_BYTES + 1) suffice)",
                             what, (unsigned long)size, j, n);
    return n;
}

/* The k-item buffer of a by-id call: on the stack for small k. */
#define NCF__BY_ID_STACK 64

/* Index-form answer a (n items or an error) turned into ids, its buffer freed when heap. */
static int ncf__by_id_answer(const ncf_model *m, int n, int32_t *items, int32_t *stack, char *ids, size_t size,
                             const char *what)
{
    if (n > 0) n = ncf__ids_out(m, items, n, ids, size, what);
    if (items != stack) NCF_FREE(items);
    return n;
}

/* Room for a by-id answer: k items, or the catalogue when k is more (no list is longer). */
static int32_t *ncf__by_id_items(const ncf_model *m, int k, int32_t *stack)
{
    if (k > m->cfg.num_items) k = m->cfg.num_items;
    return k <= NCF__BY_ID_STACK ? stack : NCF__NEW(int32_t, (size_t)k);
}

static int ncf__by_id_args(const ncf_model *m, const void *id, const ncf_rec_opts **o, char *ids, size_t size,
                           const char *what)
{
    static const ncf_rec_opts defaults = {10, 1, NULL, 0, NULL, 0, NULL, 0, NULL, 0, 0};
    if (!m || !id || !ids || size == 0) return ncf__fail(NCF_ERR_ARG, "%s: need a model, an id and an output", what);
    if (!*o) *o = &defaults;
    return ncf__check_rec_opts(*o, what);
}

NCFDEF int ncf_recommend_for_id(const ncf_model *m, const char *user, const ncf_rec_opts *o, char *ids, size_t size,
                                float *scores)
{
    int32_t stack[NCF__BY_ID_STACK], *items;
    int rc, u;
    if ((rc = ncf__by_id_args(m, user, &o, ids, size, "ncf_recommend_for_id")) != NCF_OK) return rc;
    if ((u = ncf_find(m, NCF_USER, user)) < 0) return u;
    if (!(items = ncf__by_id_items(m, o->k, stack)))
        return ncf__fail(NCF_ERR_NOMEM, "ncf_recommend_for_id: out of memory");
    return ncf__by_id_answer(m, ncf_recommend_index(m, u, o, items, scores), items, stack, ids, size,
                             "ncf_recommend_for_id");
}

NCFDEF int ncf_similar_to_id(const ncf_model *m, const char *item, const ncf_rec_opts *o, char *ids, size_t size,
                             float *scores)
{
    int32_t stack[NCF__BY_ID_STACK], *items;
    int rc, i;
    if ((rc = ncf__by_id_args(m, item, &o, ids, size, "ncf_similar_to_id")) != NCF_OK) return rc;
    if ((i = ncf_find(m, NCF_ITEM, item)) < 0) return i;
    if (!(items = ncf__by_id_items(m, o->k, stack)))
        return ncf__fail(NCF_ERR_NOMEM, "ncf_similar_to_id: out of memory");
    return ncf__by_id_answer(m, ncf_similar(m, NCF_ITEM, i, o, items, scores), items, stack, ids, size,
                             "ncf_similar_to_id");
}

NCFDEF int ncf_recommend_for_items(const ncf_model *m, const char *const *given, int n, const ncf_rec_opts *o,
                                   const ncf_fold_opts *fold, char *ids, size_t size, float *scores)
{
    ncf_fold_opts fo = fold ? *fold : ncf_fold_opts_default();
    ncf_rec_opts ro;
    int32_t stack[NCF__BY_ID_STACK], *items = NULL, *deny;
    float *row;
    int rc, j;
    if ((rc = ncf__by_id_args(m, given, &o, ids, size, "ncf_recommend_for_items")) != NCF_OK) return rc;
    if (n <= 0 || o->user_row || (size_t)n > (size_t)INT32_MAX - (size_t)o->num_deny)
        return ncf__fail(NCF_ERR_ARG, "ncf_recommend_for_items: need n > 0 items and options without user_row");
    ro = *o;
    deny = NCF__NEW(int32_t, (size_t)n + (size_t)o->num_deny);
    row = NCF__NEW(float, (size_t)ncf_row_size(m));
    if (deny && row) items = ncf__by_id_items(m, o->k, stack);
    if (!deny || !row || !items) {
        NCF_FREE(deny), NCF_FREE(row);
        return ncf__fail(NCF_ERR_NOMEM, "ncf_recommend_for_items: out of memory for %d items", n);
    }
    for (j = 0, rc = NCF_OK; j < n && rc >= 0; j++) {
        if (!given[j]) rc = ncf__fail(NCF_ERR_ARG, "ncf_recommend_for_items: items[%d] is NULL", j);
        else rc = deny[j] = ncf_find(m, NCF_ITEM, given[j]);
    }
    if (rc >= 0) {
        if (o->num_deny) memcpy(deny + n, o->deny, sizeof(int32_t) * (size_t)o->num_deny);
        ro.deny = deny, ro.num_deny = n + o->num_deny, ro.user_row = row;
        rc = ncf_fold_in(m, NCF_USER, deny, n, &fo, row);
        if (rc == NCF_OK) rc = ncf_recommend_index(m, -1, &ro, items, scores);
    }
    NCF_FREE(deny), NCF_FREE(row);
    return ncf__by_id_answer(m, rc, items, stack, ids, size, "ncf_recommend_for_items");
}

/* ---- >>fold (src/fold.c) --------------------------------------------------------------------- */
/* ---- >>fold-in: a user's rows from its items, the rest of the model frozen ------------------- */
/* A user who was not in training (or a known one with fresh items) is served from its rows
   alone: [GMF or MF row][MLP row][MF bias], found by a few Adam steps on its items as
   positives and fresh uniform negatives, every other parameter read only. The item half of
   the first dense layer comes from the cached projection, so a step costs the layers above it
   forward and back per example, and the first layer's user half once. */

NCFDEF int ncf_row_size(const ncf_model *m) { return m ? m->scratch->F + m->scratch->H + 1 : 0; }

/* User (side 0) or item (1) k's rows [GMF or MF][MLP][MF bias], int8 rows dequantized. */
static int ncf__side_row(const ncf_model *m, int side, int k, float *row, const char *what)
{
    const struct ncf__scratch *s;
    const float *r, *bias;
    int n = m ? (side ? m->cfg.num_items : m->cfg.num_users) : 0;
    if (!m || !row || k < 0 || k >= n)
        return ncf__fail(NCF_ERR_ARG, "%s: need a model, a row and a%s %s index in [0, %d)", what, side ? "n" : "",
                         side ? "item" : "user", n);
    s = m->scratch, bias = side ? m->item_bias : m->user_bias;
    if (s->F && (r = ncf__emb_row(&s->tables.tab[s->tables.gmf], side, k, row)) != row)
        memcpy(row, r, sizeof(float) * (size_t)s->F);
    if (s->H && (r = ncf__emb_row(&s->tables.tab[s->tables.mlp], side, k, row + s->F)) != row + s->F)
        memcpy(row + s->F, r, sizeof(float) * (size_t)s->H);
    row[s->F + s->H] = bias ? bias[k] : 0.0f;
    return NCF_OK;
}

NCFDEF int ncf_row(const ncf_model *m, int side, int index, float *row)
{
    int rc = ncf__side_ok(m, side, "ncf_row");
    return rc != NCF_OK ? rc : ncf__side_row(m, side, index, row, "ncf_row");
}

NCFDEF ncf_fold_opts ncf_fold_opts_default(void)
{
    ncf_fold_opts o;
    memset(&o, 0, sizeof o);
    o.steps = NCF__FOLD_STEPS, o.lr = NCF__FOLD_LR, o.num_neg = 4, o.l2 = NCF__FOLD_L2, o.seed = 1;
    return o;
}

/* A fold-in's buffers, carved from one block (the caller's workspace, or the heap). */
typedef struct {
    int32_t *given;                   /* [n] the items, sorted, each once */
    float *m1, *m2, *grad;            /* [R] Adam's moments, and the gradient */
    int32_t *cand;                    /* [C] a chunk's examples */
    float *dz;                        /* [C] d(mean loss)/d(logit) */
    float *pu;                        /* [L1] the first layer's user half, with its bias */
    float *act[NCF_MAX_LAYERS];       /* [C][L[l]] layer l's outputs, l = 1..nd */
    float *irow;                      /* [C][H] the other side's MLP rows, without a cached projection */
    float *gi;                        /* [C][F] the other side's int8 GMF rows, dequantized */
    const float *go[NCF__FOLD_CHUNK]; /* the other side's GMF rows of the chunk */
    float *d[2];                      /* [widest][C] deltas, transposed: feature-major */
    float *g1;                        /* [L1] the first layer's deltas summed over the examples */
    ncf__wide *sys, *rhs;             /* an ALS model's: [D][D] the row's system, [2][K] its right side */
    float *orow;                      /* [2][K] int8 rows of the other side, dequantized */
} ncf__fold_buf;

/* count floats (or int32s) from mem + *at, 64-byte aligned as the eval buffers; NULL when
   only sizing (mem NULL). */
static void *ncf__carve(float *mem, size_t *at, size_t count)
{
    void *p = mem ? (void *)(mem + *at) : NULL;
    *at += ncf__round_floats(count ? count : 1);
    return p;
}

/* An ALS fold-in's system is K x K (K = mf_dim) or, for a side with fewer weighing rows than
   factors, D x D over those rows (the dual form, ncf__fold_als_dual): its cost is bounded by
   the other side's table, never K^2 memory and K^3 time from a file with a few rows. The rows
   that weigh: all of the other side's when unobserved cells weigh (w0 > 0), else the given. */
static int ncf__als_rows_in(const ncf_model *m, int side, int n)
{
    return m->cfg.unobserved > 0 ? (side ? m->cfg.num_users : m->cfg.num_items) : n;
}
static int ncf__als_dim(const ncf_model *m, int side, int n)
{
    int rows = ncf__als_rows_in(m, side, n), K = m->scratch->F;
    return rows < K ? rows : K;
}

/* Floats of a fold-in's buffers for n items; with mem, also carves them. */
static size_t ncf__fold_carve(ncf__fold_buf *b, const ncf_model *m, int n, float *mem)
{
    const struct ncf__scratch *s = m->scratch;
    const int *L = m->cfg.layers, C = NCF__FOLD_CHUNK;
    size_t at = 0, R = (size_t)s->F + (size_t)s->H + 1, w = (size_t)ncf__widest_dense(m),
           L1 = (size_t)(s->H ? L[1] : 1);
    int l;
    b->given = (int32_t *)ncf__carve(mem, &at, (size_t)n);
    b->m1 = (float *)ncf__carve(mem, &at, R), b->m2 = (float *)ncf__carve(mem, &at, R);
    b->grad = (float *)ncf__carve(mem, &at, R);
    b->cand = (int32_t *)ncf__carve(mem, &at, C), b->dz = (float *)ncf__carve(mem, &at, C);
    b->pu = (float *)ncf__carve(mem, &at, L1), b->g1 = (float *)ncf__carve(mem, &at, L1);
    for (l = 1; l <= s->nd; l++) b->act[l] = (float *)ncf__carve(mem, &at, (size_t)C * (size_t)L[l]);
    b->irow = (float *)ncf__carve(mem, &at, (size_t)C * (size_t)s->H);
    b->gi = (float *)ncf__carve(mem, &at, (size_t)C * (size_t)s->F);
    b->d[0] = (float *)ncf__carve(mem, &at, w * C), b->d[1] = (float *)ncf__carve(mem, &at, w * C);
    b->sys = b->rhs = NULL, b->orow = NULL;
    if (m->cfg.optimizer == NCF_OPT_ALS) { /* (either side's system: the workspace serves both) */
        size_t K = (size_t)s->F, wide = sizeof(ncf__wide) / sizeof(float);
        int d0 = ncf__als_dim(m, 0, n), d1 = ncf__als_dim(m, 1, n);
        size_t D = (size_t)(d0 > d1 ? d0 : d1);
        b->sys = (ncf__wide *)ncf__carve(mem, &at, D * D * wide);
        b->rhs = (ncf__wide *)ncf__carve(mem, &at, 2 * K * wide), b->orow = (float *)ncf__carve(mem, &at, 2 * K);
    }
    return at;
}

NCFDEF size_t ncf_fold_workspace_size(const ncf_model *m, int n)
{
    ncf__fold_buf b;
    return m && n > 0 ? sizeof(float) * (ncf__fold_carve(&b, m, n, NULL) + NCF__ALIGN_FLOATS) : 0;
}

/* The logits of the folded row (side 0 a user's, 1 an item's) against the other side's
   b->cand[0..c), into b->dz, every MLP layer kept in b->act. b->pu holds the row's half of the
   first layer (with the layer's bias on the user's side, as training adds it); proj, the
   items' cached half (user fold-in only), or NULL. The scores are the training forward's. */
static void ncf__fold_forward(const ncf_model *m, int side, const float *proj, const float *row, ncf__fold_buf *b,
                              int c)
{
    const struct ncf__scratch *s = m->scratch;
    const int *L = m->cfg.layers, F = s->F, H = s->H, nd = s->nd;
    const float rb = row[F + H];
    int j, d, l;
    if (H) { /* forward through the MLP, every layer kept */
        int L1 = L[1];
        if (!proj) { /* the other side's rows through its half of the first layer */
            for (j = 0; j < c; j++) {
                float *dst = b->irow + (size_t)j * H;
                const float *r = ncf__emb_row(&s->tables.tab[s->tables.mlp], !side, b->cand[j], dst);
                if (r != dst) memcpy(dst, r, sizeof(float) * (size_t)H);
            }
            ncf__gemm_rows(b->act[1], L1, b->irow, H, 1, m->w[1] + (size_t)!side * H * L1, L1, side ? m->b[1] : NULL, 0,
                           c, L1, H, 0);
        }
        for (j = 0; j < c; j++) {
            const float *pi = proj ? proj + (size_t)b->cand[j] * L1 : b->act[1] + (size_t)j * L1;
            float *h = b->act[1] + (size_t)j * L1;
            for (d = 0; d < L1; d++) {
                float v = b->pu[d] + pi[d];
                h[d] = v > 0.0f ? v : 0.0f;
            }
        }
        for (l = 2; l <= nd; l++)
            ncf__gemm_rows(b->act[l], L[l], b->act[l - 1], L[l - 1], 1, m->w[l], L[l], m->b[l], 0, c, L[l], L[l - 1],
                           NCF__RELU);
    }
    for (j = 0; j < c; j++) { /* the logit as serving computes it (the user's bias first, as training adds them) */
        int o = b->cand[j];
        const float *go = F ? ncf__emb_row(&s->tables.tab[s->tables.gmf], !side, o, b->gi + (size_t)j * F) : NULL;
        float bias = !m->user_bias ? 0.0f : side ? m->user_bias[o] + rb : rb + m->item_bias[o];
        const float *h = H ? b->act[nd] + (size_t)j * s->top : NULL;
        b->dz[j] = side ? ncf__output_biased(m, go, F ? row : NULL, bias, h)
                        : ncf__output_biased(m, F ? row : NULL, go, bias, h);
        b->go[j] = go;
    }
}

/* Examples [e0, e0 + c) of a step, the positives first: forward, then d(mean loss)/d(row) added
   into grad (the first layer's deltas into g1, multiplied out by the caller). */
static void ncf__fold_chunk(const ncf_model *m, int side, const float *proj, const float *row, ncf__fold_buf *b,
                            int64_t e0, int c, int npos, float inv_e, float neg_e)
{
    const struct ncf__scratch *s = m->scratch;
    const int *L = m->cfg.layers, C = NCF__FOLD_CHUNK, F = s->F, H = s->H, nd = s->nd;
    const float *wh = m->w_out ? m->w_out + F : NULL;
    int j, d, l, cur;
    ncf__fold_forward(m, side, proj, row, b, c);
    for (j = 0; j < c; j++) { /* d(mean loss)/d(logit); the GMF or MF part's gradient */
        float dz = e0 + j < npos ? (1.0f / (1.0f + expf(-b->dz[j])) - 1.0f) * inv_e
                                 : (1.0f / (1.0f + expf(-b->dz[j])) - 0.0f) * neg_e;
        b->dz[j] = dz;
        for (d = 0; d < F; d++) b->grad[d] += dz * s->tables.gmf_weights[d] * b->go[j][d];
        if (m->user_bias) b->grad[F + H] += dz;
    }
    if (!H) return;
    for (d = 0; d < s->top; d++) /* back through the MLP, deltas feature-major so each layer is one GEMM */
        for (j = 0; j < c; j++)
            b->d[0][(size_t)d * C + j] = b->act[nd][(size_t)j * s->top + d] > 0.0f ? b->dz[j] * wh[d] : 0.0f;
    for (l = nd, cur = 0; l >= 2; l--, cur ^= 1) {
        ncf__gemm_rows(b->d[cur ^ 1], C, m->w[l], L[l], 1, b->d[cur], C, NULL, 0, L[l - 1], c, L[l], 0);
        for (d = 0; d < L[l - 1]; d++)
            for (j = 0; j < c; j++)
                if (!(b->act[l - 1][(size_t)j * L[l - 1] + d] > 0.0f)) b->d[cur ^ 1][(size_t)d * C + j] = 0.0f;
    }
    for (d = 0; d < L[1]; d++)
        for (j = 0; j < c; j++) b->g1[d] += b->d[cur][(size_t)d * C + j];
}

/* One step: the gradient of the mean loss over the given items and fresh negatives, L2, Adam.
   c[0], c[1]: beta1 and beta2 to the power step, made step + 1's here. */
/* The folded row's half of the first layer into b->pu: W1's half of its side times its MLP
   row, with the layer's bias on the user's side (as training adds it). */
static void ncf__fold_first_half(const ncf_model *m, int side, const float *row, ncf__fold_buf *b)
{
    int H = m->scratch->H, L1 = m->cfg.layers[1];
    ncf__gemm_rows(b->pu, L1, row + m->scratch->F, 0, 1, m->w[1] + (size_t)side * H * L1, L1, side ? NULL : m->b[1], 0,
                   1, L1, H, 0);
}

/* Rated items per item, the mean over the catalogue: every varint of the rated lists ends in a
   byte under 128, one per rated item. 0 when the model keeps no lists. */
static double ncf__mean_item_degree(const ncf_model *m)
{
    int64_t k, total = 0, bytes = m->rated ? m->rated_ptr[m->cfg.num_users] : 0;
    for (k = 0; k < bytes; k++) total += m->rated[k] < 128;
    return (double)total / (double)m->cfg.num_items;
}

/* w, the weight of a negative's loss term: 1 for a user (training draws num_neg negatives a
   positive, as the fold-in does); for an item, what makes its negatives weigh as training's do:
   an epoch draws an item as a negative about num_neg times the mean item degree D, whatever its
   own n positives, so each of the fold-in's num_neg n negatives weighs D / n. */
static float ncf__fold_neg_weight(const ncf_model *m, int side, int n)
{
    double d = side ? ncf__mean_item_degree(m) : 0;
    return side && d > 0 ? (float)(d / n) : 1.0f;
}

static void ncf__fold_step(const ncf_model *m, int side, const ncf_fold_opts *o, int n, int step, float *row,
                           ncf__fold_buf *b, float *c, float w)
{
    const struct ncf__scratch *s = m->scratch;
    const float *proj = side ? NULL : ncf__proj_row_major(m, ncf__cached_projection(m));
    int64_t E = (int64_t)n + (int64_t)n * o->num_neg, e0;
    int R = s->F + s->H + 1, j, r, L1 = m->cfg.layers[1], others = side ? m->cfg.num_users : m->cfg.num_items;
    float b1 = 0.9f, b2 = 0.999f, c1 = c[0] *= b1, c2 = c[1] *= b2;
    float inv_e = w == 1.0f ? 1.0f / (float)E : (float)(1.0 / (n + (double)w * (double)(E - n))), neg_e = w * inv_e;
    memset(b->grad, 0, sizeof(float) * (size_t)R);
    if (s->H) memset(b->g1, 0, sizeof(float) * (size_t)L1), ncf__fold_first_half(m, side, row, b);
    for (e0 = 0; e0 < E; e0 += NCF__FOLD_CHUNK) {
        int n_c = E - e0 < NCF__FOLD_CHUNK ? (int)(E - e0) : NCF__FOLD_CHUNK;
        for (j = 0; j < n_c; j++) {
            int64_t e = e0 + j;
            b->cand[j] = e < n ? b->given[e]
                               : (int32_t)ncf__nth_absent(b->given, n,
                                                          (int32_t)ncf__below(ncf__hash3(o->seed ^ NCF__TAG_FOLD,
                                                                                         (uint64_t)step, (uint64_t)e),
                                                                              (uint32_t)(others - n)));
        }
        ncf__fold_chunk(m, side, proj, row, b, e0, n_c, n, inv_e, neg_e);
    }
    if (s->H) /* the MLP row's gradient: W1's half of the row's side times the summed deltas */
        ncf__gemm_rows(b->grad + s->F, 1, m->w[1] + (size_t)side * s->H * L1, L1, 1, b->g1, 1, NULL, 0, s->H, 1, L1, 0);
    for (r = 0; r < R; r++) {
        float g = b->grad[r] + (r < s->F + s->H ? o->l2 * row[r] : 0.0f);
        b->m1[r] = b1 * b->m1[r] + (1.0f - b1) * g;
        b->m2[r] = b2 * b->m2[r] + (1.0f - b2) * g * g;
        row[r] -= o->lr * (b->m1[r] / (1.0f - c1)) / (sqrtf(b->m2[r] / (1.0f - c2)) + 1e-8f);
    }
}

/* The ALS fold-in with fewer weighing rows (D) than factors: A = mf_reg I + Y^T W Y with W the
   rows' weights (1 given, w0 the rest) and b = Y^T W p (p 1 for the given) give, since
   (mf_reg I + Y^T W Y)^-1 Y^T = Y^T (mf_reg I + W Y Y^T)^-1, x = Y^T z with
   (Y Y^T + mf_reg W^-1) z = p: a D x D system, D^2 K + D^3 work. The same row in exact
   arithmetic; mf_reg 0 leaves A singular (rank D < K), as the K x K form finds it. */
static int ncf__fold_als_dual(const ncf_model *m, int side, int n, ncf__fold_buf *b, float *row, const char *what,
                              int D)
{
    const ncf__table *T = &m->scratch->tables.tab[m->scratch->tables.gmf];
    ncf__wide w0 = m->cfg.unobserved, lambda = m->cfg.mf_reg, *S = b->sys, *z = b->rhs, *x = b->rhs + m->scratch->F;
    int K = m->scratch->F, all = w0 > 0, a, c, k, g = 0;
    if (!(lambda > 0))
        return ncf__fail(NCF_ERR_DATA, "%s: the ALS system is singular (an mf_reg of 0 with too few rows?)", what);
    for (a = 0; a < D; a++) {
        int ra = all ? a : b->given[a], given = g < n && b->given[g] == ra;
        const float *ya = ncf__emb_row(T, !side, ra, b->orow);
        g += given;
        for (c = 0; c <= a; c++) {
            const float *yc = ncf__emb_row(T, !side, all ? c : b->given[c], b->orow + K);
            ncf__wide dot = 0;
            for (k = 0; k < K; k++) dot += (ncf__wide)ya[k] * yc[k];
            S[(size_t)a * D + c] = dot;
        }
        S[(size_t)a * D + a] += lambda / (given ? 1 : w0);
        z[a] = given ? 1 : 0;
    }
    if (ncf__cholesky_solve(S, D, z))
        return ncf__fail(NCF_ERR_DATA, "%s: the ALS system is singular (an mf_reg of 0 with too few rows?)", what);
    for (k = 0; k < K; k++) x[k] = 0;
    for (a = 0; a < D; a++) {
        const float *ya = ncf__emb_row(T, !side, all ? a : b->given[a], b->orow);
        for (k = 0; k < K; k++) x[k] += z[a] * ya[k];
    }
    for (k = 0; k < K; k++) {
        row[k] = (float)x[k];
        if (NCF__NONFINITE(row[k]))
            return ncf__fail(NCF_ERR_DATA, "%s: the ALS row is not finite (factor %d)", what, k);
    }
    row[K] = 0.0f;
    return NCF_OK;
}

/* An ALS model's fold-in: the row that training's least squares gives it, exactly. With the
   given rows y_j of the other side (each a positive of confidence 1) and its Gram matrix G,
   (w0 G + mf_reg I + (1 - w0) sum_j y_j y_j^T) x = sum_j y_j, solved by Cholesky's factors
   (implicit's recalculate_user). The bias stays 0, as training leaves it. */
static int ncf__fold_als(const ncf_model *m, int side, int n, ncf__fold_buf *b, float *row, const char *what)
{
    const ncf__table *T = &m->scratch->tables.tab[m->scratch->tables.gmf];
    const ncf__wide *G = ncf__cached_gram(m, !side);
    ncf__wide w0 = m->cfg.unobserved, *A = b->sys, *v = b->rhs;
    int K = m->scratch->F, j, a, c, D = ncf__als_dim(m, side, n);
    if (D < K) return ncf__fold_als_dual(m, side, n, b, row, what, D);
    if (G) memcpy(A, G, sizeof(ncf__wide) * (size_t)K * K);
    else ncf__side_gram(m, !side, A, b->orow);
    for (a = 0; a < K * K; a++) A[a] *= w0;
    for (a = 0; a < K; a++) A[(size_t)a * K + a] += m->cfg.mf_reg, v[a] = 0;
    for (j = 0; j < n; j++) {
        const float *y = ncf__emb_row(T, !side, b->given[j], b->orow);
        for (a = 0; a < K; a++) {
            ncf__wide ya = (1 - w0) * y[a], *Aa = A + (size_t)a * K;
            for (c = 0; c <= a; c++) Aa[c] += ya * y[c]; /* (the lower triangle: all the factors read) */
            v[a] += y[a];
        }
    }
    if (ncf__cholesky_solve(A, K, v))
        return ncf__fail(NCF_ERR_DATA, "%s: the ALS system is singular (an mf_reg of 0 with too few rows?)", what);
    for (a = 0; a < K; a++) {
        row[a] = (float)v[a];
        if (NCF__NONFINITE(row[a]))
            return ncf__fail(NCF_ERR_DATA, "%s: the ALS row is not finite (factor %d)", what, a);
    }
    row[K] = 0.0f;
    return NCF_OK;
}

/* A fold-in of side 0 (a user, from items) or 1 (an item, from users). */
static int ncf__fold(const ncf_model *m, int side, const int32_t *given, int n, const ncf_fold_opts *o, float *row,
                     const char *what)
{
    const char *other = side ? "user" : "item";
    int others = side ? m->cfg.num_users : m->cfg.num_items;
    ncf__fold_buf b;
    float *mem, c[2] = {1.0f, 1.0f}, w;
    int j, nu, step, R;
    if (!given || !o || !row || n <= 0)
        return ncf__fail(NCF_ERR_ARG, "%s: need a model, %ss (n > 0), options and a row", what, other);
    if (o->steps < 0 || o->steps > NCF__FOLD_MOST_STEPS || !(o->lr > 0.0f && o->lr < 1e30f) || o->num_neg < 0 ||
        o->num_neg > NCF__FOLD_MOST_NEG || !(o->l2 >= 0.0f && o->l2 < 1e30f))
        return ncf__fail(NCF_ERR_ARG, "%s: need 0 <= steps <= %d, a finite lr > 0, 0 <= num_neg <= %d and l2 >= 0",
                         what, NCF__FOLD_MOST_STEPS, NCF__FOLD_MOST_NEG);
    if (NCF__MPI_STALE(m)) return ncf__fail(NCF_ERR_ARG, "%s: " NCF__STALE_TEXT, what);
    for (j = 0; o->start && j < ncf_row_size(m); j++)
        if (!(o->start[j] >= -1e6f && o->start[j] <= 1e6f)) /* (the model files' bound; NaN fails it) */
            return ncf__fail(NCF_ERR_ARG, "%s: start[%d] is not a number in [-1e6, 1e6]", what, j);
    for (j = 0; j < n; j++)
        if (given[j] < 0 || given[j] >= others)
            return ncf__fail(NCF_ERR_ARG,
                             "%s: %ss[%d] = %d is not a%s %s index in [0, %d) (ncf_%s_index finds an id's)", what,
                             other, j, (int)given[j], side ? "" : "n", other, others, other);
    if (o->work) {
        size_t need = ncf_fold_workspace_size(m, n);
        if (o->work_size < need)
            return ncf__fail(NCF_ERR_ARG, "%s: workspace of %lu bytes; %d %ss need %lu (ncf_fold_workspace_size)", what,
                             (unsigned long)o->work_size, n, other, (unsigned long)need);
        mem = (float *)(void *)((char *)o->work + (size_t)(-(intptr_t)o->work & 63));
    } else if (!(mem = NCF__NEW(float, ncf_fold_workspace_size(m, n) / sizeof(float)))) {
        return ncf__fail(NCF_ERR_NOMEM, "%s: out of memory for %d %ss", what, n, other);
    }
    ncf__fold_carve(&b, m, n, mem);
    for (j = 0; j < n; j++) b.given[j] = given[j];
    ncf__heap_sort((char *)b.given, (size_t)n, sizeof *b.given,
                   ncf__cmp_i32); /* (in place: the workspace form allocates nothing) */
    for (j = nu = 0; j < n; j++)
        if (nu == 0 || b.given[j] != b.given[nu - 1]) b.given[nu++] = b.given[j];
    if (m->cfg.optimizer == NCF_OPT_ALS) {
        int rc = ncf__fold_als(m, side, nu, &b, row, what);
        if (!o->work) NCF_FREE(mem);
        return rc;
    }
    R = ncf_row_size(m);
    if (nu == others && o->num_neg > 0 && o->steps > 0) {
        if (!o->work) NCF_FREE(mem);
        return ncf__fail(NCF_ERR_DATA, "%s: the %ss given are all of them: no negative to draw", what, other);
    }
    if (o->start) memcpy(row, o->start, sizeof(float) * (size_t)R);
    else memset(row, 0, sizeof(float) * (size_t)R);
    if (!m->user_bias) row[R - 1] = 0.0f;
    memset(b.m1, 0, sizeof(float) * (size_t)R), memset(b.m2, 0, sizeof(float) * (size_t)R);
    w = ncf__fold_neg_weight(m, side, nu);
    for (step = 0; step < o->steps; step++) ncf__fold_step(m, side, o, nu, step, row, &b, c, w);
    if (!o->work) NCF_FREE(mem);
    for (j = 0; j < R; j++)
        if (NCF__NONFINITE(row[j]))
            return ncf__fail(NCF_ERR_DATA, "%s: the row is not finite (value %d): the model's scores overflow", what,
                             j);
    return NCF_OK;
}

NCFDEF int ncf_fold_in(const ncf_model *m, int side, const int32_t *given, int n, const ncf_fold_opts *o, float *row)
{
    ncf_fold_opts d = ncf_fold_opts_default();
    int rc = ncf__side_ok(m, side, "ncf_fold_in");
    return rc != NCF_OK ? rc : ncf__fold(m, side, given, n, o ? o : &d, row, "ncf_fold_in");
}

static int ncf__predict_users(const ncf_model *m, int i, const float *irow, const int32_t *users, int n, float *logits)
{
    ncf__fold_buf b;
    float *mem, *own = NULL;
    int j, R;
    if (!m || !users || !logits || n < 0) return ncf__fail(NCF_ERR_ARG, "ncf_predict_for: NULL argument or n < 0");
    if (!irow && (i < 0 || i >= m->cfg.num_items))
        return ncf__fail(NCF_ERR_ARG, "ncf_predict_for: item index %d is not in [0, %d)", i, m->cfg.num_items);
    for (j = 0; j < n; j++)
        if (users[j] < 0 || users[j] >= m->cfg.num_users)
            return ncf__fail(NCF_ERR_ARG, "ncf_predict_for: users[%d] = %d is not a user index", j, (int)users[j]);
    R = ncf_row_size(m);
    mem = NCF__NEW(float, ncf_fold_workspace_size(m, 1) / sizeof(float) + (irow ? 0 : (size_t)R));
    if (!mem) return ncf__fail(NCF_ERR_NOMEM, "ncf_predict_for: out of memory");
    own = irow ? NULL : mem + ncf_fold_workspace_size(m, 1) / sizeof(float);
    if (own) ncf__side_row(m, NCF_ITEM, i, own, "ncf_predict_for"), irow = own;
    ncf__fold_carve(&b, m, 1, (float *)(void *)((char *)mem + (size_t)(-(intptr_t)mem & 63)));
    if (m->scratch->H) ncf__fold_first_half(m, 1, irow, &b);
    for (j = 0; j < n; j += NCF__FOLD_CHUNK) {
        int c = n - j < NCF__FOLD_CHUNK ? n - j : NCF__FOLD_CHUNK;
        memcpy(b.cand, users + j, sizeof(int32_t) * (size_t)c);
        ncf__fold_forward(m, 1, NULL, irow, &b, c);
        memcpy(logits + j, b.dz, sizeof(float) * (size_t)c);
    }
    NCF_FREE(mem);
    return NCF_OK;
}

NCFDEF int ncf_predict_for(const ncf_model *m, int side, int index, const float *row, const int32_t *others, int n,
                           float *logits)
{
    int rc = ncf__side_ok(m, side, "ncf_predict_for");
    if (rc != NCF_OK) return rc;
    return side == NCF_USER ? ncf__predict_items(m, index, row, others, n, logits)
                            : ncf__predict_users(m, index, row, others, n, logits);
}

#ifndef NCF_INFERENCE_ONLY
/* ---- >>growth: a model that grows with new data ---------------------------------------------- */

/* map[k] = the index in t of ids' id k as written, or -1; *missing counts t's ids not in ids. */
static int ncf__map_ids(ncf__ids from, ncf__ids to, int32_t *map, int *missing, int *first_missing)
{
    char name[NCF_MAX_ID_BYTES + 1];
    uint8_t *hit = NCF__ZNEW(uint8_t, to.n ? to.n : 1);
    int k;
    if (!hit) return ncf__fail(NCF_ERR_NOMEM, "out of memory mapping ids");
    for (k = 0; k < from.n; k++) {
        int n = ncf__ids_name(&from, k, name, sizeof name);
        map[k] = n < 0 ? -1 : ncf__ids_find(&to, name, (size_t)n);
        if (map[k] >= 0) hit[map[k]] = 1;
    }
    *missing = 0, *first_missing = -1;
    for (k = 0; k < to.n; k++)
        if (!hit[k]) (*missing)++, *first_missing = *first_missing < 0 ? k : *first_missing;
    NCF_FREE(hit);
    return NCF_OK;
}

/* Rows of tensor t of the old model into the new one, row r of new from row map[r] of old when
   >= 0 (a fresh row otherwise): parameters, and Adam moments where both keep them. */
static void ncf__copy_rows(ncf_model *dst, const ncf_model *src, int t, const int32_t *map)
{
    const ncf_tensor *T = &dst->tensors[t], *S = &src->tensors[t];
    size_t r, cols = (size_t)T->cols;
    for (r = 0; r < (size_t)T->rows; r++) {
        size_t from = map ? (size_t)map[r] : r;
        if (map && map[r] < 0) continue;
        memcpy(dst->params + T->offset + r * cols, src->params + S->offset + from * cols, sizeof(float) * cols);
        if (dst->adam_m && src->adam_m) {
            memcpy(dst->adam_m + T->offset + r * cols, src->adam_m + S->offset + from * cols, sizeof(float) * cols);
            memcpy(dst->adam_v + T->offset + r * cols, src->adam_v + S->offset + from * cols, sizeof(float) * cols);
        }
    }
}

/* A table's ids and extra names merged and sorted as every table is (integers by value when
   all are plain integers, else text by bytes): into *out (num, or text and at, allocated),
   with where each old id (map_old) and each extra name (map_extra) lands. */

static int ncf__union_ids(ncf__ids t, const char *extra, const int64_t *extra_at, int nextra, int64_t **num,
                          char **text, int64_t **at, int32_t *map_old, int32_t *map_extra)
{
    int n = t.n + nextra, k, all_int = 1;
    char name[NCF_MAX_ID_BYTES + 1], *names;
    ncf__idkey *key = NCF__NEW(ncf__idkey, n);
    int64_t bytes = 0;
    *num = NULL, *text = NULL, *at = NULL;
    for (k = 0; k < t.n; k++) bytes += ncf__ids_name(&t, k, name, sizeof name);
    names = NCF__NEW(char, bytes + extra_at[nextra] + 1);
    if (!key || !names) {
        NCF_FREE(key), NCF_FREE(names);
        return ncf__fail(NCF_ERR_NOMEM, "out of memory merging ids");
    }
    for (k = 0, bytes = 0; k < n; k++) {
        int len = k < t.n ? ncf__ids_name(&t, k, name, sizeof name) : (int)(extra_at[k - t.n + 1] - extra_at[k - t.n]);
        memcpy(names + bytes, k < t.n ? name : extra + extra_at[k - t.n], (size_t)len);
        key[k].p = names + bytes, key[k].len = len, key[k].src = k;
        all_int &= ncf__plain_int(key[k].p, key[k].p + len, &key[k].num);
        bytes += len;
    }
    ncf__sort(key, (size_t)n, sizeof *key, all_int ? ncf__cmp_idkey_num : ncf__cmp_idkey_text);
    if (all_int) *num = NCF__NEW(int64_t, n);
    else *text = NCF__NEW(char, bytes + 1), *at = NCF__NEW(int64_t, (size_t)n + 1);
    if (all_int ? !*num : !*text || !*at) {
        NCF_FREE(key), NCF_FREE(names), NCF__DROP(*num), NCF__DROP(*text), NCF__DROP(*at);
        return ncf__fail(NCF_ERR_NOMEM, "out of memory merging ids");
    }
    for (k = 0, bytes = 0; k < n; k++) {
        if (all_int) (*num)[k] = key[k].num;
        else (*at)[k] = bytes, memcpy(*text + bytes, key[k].p, (size_t)key[k].len), bytes += key[k].len;
        if (key[k].src < t.n) map_old[key[k].src] = k;
        else map_extra[key[k].src - t.n] = k;
    }
    if (!all_int) (*at)[n] = bytes;
    NCF_FREE(key), NCF_FREE(names);
    return NCF_OK;
}

/* The names of the model's ids (side 0 users, 1 items) that the dataset lacks, back to back;
   on failure *text and *at are NULL. */
static int ncf__missing_ids(const ncf_dataset *d, const ncf_model *m, int side, char **text, int64_t **at, int *n)
{
    ncf__ids mt = ncf__model_ids(m, side), dt = ncf__dataset_ids(d, side);
    char name[NCF_MAX_ID_BYTES + 1];
    int k, len;
    int64_t bytes = 0;
    *n = 0, *text = NULL;
    for (k = 0; k < mt.n; k++) bytes += ncf__ids_name(&mt, k, name, sizeof name);
    *at = NCF__NEW(int64_t, (size_t)mt.n + 1), *text = NCF__NEW(char, bytes + 1);
    if (!*at || !*text) {
        NCF__DROP(*at), NCF__DROP(*text);
        return ncf__fail(NCF_ERR_NOMEM, "out of memory for the model's %d %s ids", mt.n, side ? "item" : "user");
    }
    for (k = 0, (*at)[0] = 0; k < mt.n; k++) {
        len = ncf__ids_name(&mt, k, name, sizeof name);
        if (ncf__ids_find(&dt, name, (size_t)len) >= 0) continue;
        memcpy(*text + (*at)[*n], name, (size_t)len);
        (*at)[*n + 1] = (*at)[*n] + len, (*n)++;
    }
    return NCF_OK;
}

/* d's per-user rows of width w (eval or validation negatives) in the new user order, items
   remapped; zeros for the users added. */
static int32_t *ncf__moved_rows(const int32_t *rows, int w, int U2, const int32_t *old_of, const int32_t *imap)
{
    int32_t *out = rows ? NCF__ZNEW(int32_t, (size_t)U2 * (size_t)w + 1) : NULL;
    int v, j;
    for (v = 0; out && v < U2; v++)
        for (j = 0; old_of[v] >= 0 && j < w; j++) out[(size_t)v * w + j] = imap[rows[(size_t)old_of[v] * w + j]];
    return out;
}

/* A positive and its weight, to sort them together (the item first: ncf__cmp_i32 orders them). */
typedef struct {
    int32_t item;
    float weight;
} ncf__weighed;

static int32_t *ncf__moved_items(const int32_t *per_user, int U2, const int32_t *old_of, const int32_t *imap)
{
    int32_t *out = per_user ? NCF__NEW(int32_t, U2 ? U2 : 1) : NULL;
    int v;
    for (v = 0; out && v < U2; v++) out[v] = old_of[v] < 0 || per_user[old_of[v]] < 0 ? -1 : imap[per_user[old_of[v]]];
    return out;
}

NCFDEF int ncf_dataset_add_ids(ncf_dataset *d, const ncf_model *m)
{
    char *miss[2] = {NULL, NULL}, *text[2] = {NULL, NULL};
    int64_t *miss_at[2] = {NULL, NULL}, *num[2] = {NULL, NULL}, *at[2] = {NULL, NULL}, *ptr = NULL;
    int32_t *map[2] = {NULL, NULL}, *xmap[2] = {NULL, NULL}, *old_of = NULL, *items = NULL, *tu = NULL;
    int32_t *test = NULL, *val = NULL, *recent = NULL, *eneg = NULL, *vneg = NULL;
    float *wt = NULL, *vwt = NULL;
    ncf__weighed *pair = NULL; /* with weights: each user's (item, weight) pairs, sorted together */
    int nmiss[2] = {0, 0}, rc = NCF_OK, side, U2, I2, v;
    if (!d || !d->user_ptr || !m || !ncf__has_ids(m))
        return ncf__fail(NCF_ERR_ARG, "ncf_dataset_add_ids: need a dataset and a model with ids");
    if (ncf__is_shard(d)) return ncf__fail(NCF_ERR_ARG, "ncf_dataset_add_ids: the dataset is a shard");
    if (d->test_ptr) return ncf__fail(NCF_ERR_ARG, "ncf_dataset_add_ids: a split of many items per user is not grown");
    for (side = 0; side < 2 && rc == NCF_OK; side++)
        rc = ncf__missing_ids(d, m, side, &miss[side], &miss_at[side], &nmiss[side]);
    if (rc != NCF_OK || (!nmiss[0] && !nmiss[1])) goto done;
    U2 = d->num_users + nmiss[0], I2 = d->num_items + nmiss[1];
    for (side = 0; side < 2 && rc == NCF_OK; side++) {
        int n = side ? d->num_items : d->num_users;
        map[side] = NCF__NEW(int32_t, n ? n : 1), xmap[side] = NCF__NEW(int32_t, nmiss[side] ? nmiss[side] : 1);
        rc = !map[side] || !xmap[side]
            ? ncf__fail(NCF_ERR_NOMEM, "out of memory")
            : ncf__union_ids(ncf__dataset_ids(d, side), miss[side], miss_at[side], nmiss[side], &num[side], &text[side],
                             &at[side], map[side], xmap[side]);
    }
    if (rc != NCF_OK) goto done;
    old_of = NCF__NEW(int32_t, U2), ptr = NCF__NEW(int64_t, (size_t)U2 + 1);
    items = NCF__NEW(int32_t, d->num_train ? d->num_train : 1), tu = NCF__NEW(int32_t, d->num_train ? d->num_train : 1);
    if (d->weight)
        wt = NCF__NEW(float, d->num_train ? d->num_train : 1),
        pair = NCF__NEW(ncf__weighed, d->num_train ? d->num_train : 1);
    if (!old_of || !ptr || !items || !tu || (d->weight && (!wt || !pair))) {
        rc = ncf__fail(NCF_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (v = 0; v < U2; v++) old_of[v] = -1;
    for (v = 0; v < d->num_users; v++) old_of[map[0][v]] = v;
    for (v = 0, ptr[0] = 0; v < U2; v++) { /* each user's items remapped, ascending again */
        int u = old_of[v];
        int64_t k, n = u < 0 ? 0 : d->user_ptr[u + 1] - d->user_ptr[u], o = ptr[v];
        for (k = 0; k < n; k++) items[o + k] = map[1][d->items[d->user_ptr[u] + k]], tu[o + k] = v;
        if (pair) {
            for (k = 0; k < n; k++) pair[o + k].item = items[o + k], pair[o + k].weight = d->weight[d->user_ptr[u] + k];
            ncf__sort(pair + o, (size_t)n, sizeof *pair, ncf__cmp_i32); /* (item first: by item) */
            for (k = 0; k < n; k++) items[o + k] = pair[o + k].item, wt[o + k] = pair[o + k].weight;
        } else ncf__sort(items + o, (size_t)n, sizeof *items, ncf__cmp_i32);
        ptr[v + 1] = ptr[v] + n;
    }
    test = ncf__moved_items(d->test_item, U2, old_of, map[1]);
    val = ncf__moved_items(d->val_item, U2, old_of, map[1]),
    recent = ncf__moved_items(d->recent_item, U2, old_of, map[1]);
    eneg = ncf__moved_rows(d->eval_neg, d->num_eval_neg, U2, old_of, map[1]);
    vneg = ncf__moved_rows(d->val_neg, d->num_val_neg, U2, old_of, map[1]);
    if (d->val_weight && (vwt = NCF__NEW(float, U2 ? U2 : 1)) != NULL)
        for (v = 0; v < U2; v++) vwt[v] = old_of[v] < 0 ? 0 : d->val_weight[old_of[v]];
    if (!test || (d->val_item && !val) || (d->val_weight && !vwt) || (d->recent_item && !recent) ||
        (d->eval_neg && !eneg) || (d->val_neg && !vneg)) {
        rc = ncf__fail(NCF_ERR_NOMEM, "out of memory");
        goto done;
    }
    { /* all built: in they go, and out go the old arrays */
        ncf_dataset old = *d;
        d->user_ptr = ptr, d->items = items, d->train_user = tu, d->test_item = test, d->val_item = val;
        d->recent_item = recent, d->eval_neg = eneg, d->val_neg = vneg, d->weight = wt, d->val_weight = vwt;
        d->raw_user = num[0], d->raw_item = num[1], d->user_text = text[0], d->item_text = text[1];
        d->user_text_at = at[0], d->item_text_at = at[1];
        ptr = NULL, items = tu = test = val = recent = eneg = vneg = NULL, wt = vwt = NULL;
        num[0] = num[1] = at[0] = at[1] = NULL, text[0] = text[1] = NULL;
        NCF_FREE(old.user_ptr), NCF_FREE(old.items), NCF_FREE(old.train_user), NCF_FREE(old.test_item);
        NCF_FREE(old.val_item), NCF_FREE(old.recent_item), NCF_FREE(old.eval_neg), NCF_FREE(old.val_neg);
        NCF_FREE(old.weight), NCF_FREE(old.val_weight);
        NCF_FREE(old.raw_user), NCF_FREE(old.raw_item), NCF_FREE(old.user_text), NCF_FREE(old.item_text);
        NCF_FREE(old.user_text_at), NCF_FREE(old.item_text_at);
    }
    d->num_users = U2, d->num_items = I2;
done:
    for (side = 0; side < 2; side++)
        NCF_FREE(miss[side]), NCF_FREE(miss_at[side]), NCF_FREE(num[side]), NCF_FREE(text[side]), NCF_FREE(at[side]),
            NCF_FREE(map[side]), NCF_FREE(xmap[side]);
    NCF_FREE(old_of), NCF_FREE(ptr), NCF_FREE(items), NCF_FREE(tu), NCF_FREE(test), NCF_FREE(val), NCF_FREE(recent);
    NCF_FREE(eneg), NCF_FREE(vneg), NCF_FREE(wt), NCF_FREE(vwt), NCF_FREE(pair);
    return rc;
}

NCFDEF int ncf_model_grow(ncf_model **mp, const ncf_dataset *d)
{
    ncf_model *m, *g = NULL;
    ncf_config c;
    int32_t *umap = NULL, *imap = NULL;
    int rc, t, mu, mi, fu, fi;
    char name[NCF_MAX_ID_BYTES + 1];
    if (!mp || !*mp || !d || !d->user_ptr)
        return ncf__fail(NCF_ERR_ARG, "ncf_model_grow: need a model and a loaded dataset");
    m = *mp;
    if ((rc = ncf__writable(m, "ncf_model_grow")) != NCF_OK) return rc;
    if (!ncf__has_ids(m))
        return ncf__fail(NCF_ERR_ARG, "ncf_model_grow: the model holds no ids to match the data's by");
    umap = NCF__NEW(int32_t, d->num_users ? d->num_users : 1),
    imap = NCF__NEW(int32_t, d->num_items ? d->num_items : 1);
    if (!umap || !imap) {
        rc = ncf__fail(NCF_ERR_NOMEM, "ncf_model_grow: out of memory");
        goto done;
    }
    if ((rc = ncf__map_ids(ncf__dataset_ids(d, 0), ncf__model_ids(m, 0), umap, &mu, &fu)) != NCF_OK ||
        (rc = ncf__map_ids(ncf__dataset_ids(d, 1), ncf__model_ids(m, 1), imap, &mi, &fi)) != NCF_OK)
        goto done;
    if (mu || mi) {
        ncf__ids ids = ncf__model_ids(m, mu ? 0 : 1);
        ncf__ids_name(&ids, mu ? fu : fi, name, sizeof name);
        rc = ncf__fail(NCF_ERR_DATA,
                       "ncf_model_grow: the data lacks %d of the model's users and %d of its items "
                       "(%s '%s', ...): growing would drop them (ncf_dataset_add_ids keeps them)",
                       mu, mi, mu ? "user" : "item", ncf__shown(name, name + strlen(name)));
        goto done;
    }
    c = m->cfg;
    c.num_users = d->num_users, c.num_items = d->num_items;
    if ((rc = ncf_model_create(&g, &c)) != NCF_OK) goto done;
    for (t = 0; t < g->num_tensors; t++) {
        const char *nm = g->tensors[t].name;
        int per_user = !strcmp(nm, "gmf_user") || !strcmp(nm, "mlp_user") || !strcmp(nm, "user_bias");
        int per_item = !strcmp(nm, "gmf_item") || !strcmp(nm, "mlp_item") || !strcmp(nm, "item_bias");
        ncf__copy_rows(g, m, t, per_user ? umap : per_item ? imap : NULL);
    }
    g->step = m->step, g->epoch = m->epoch;
    if ((rc = ncf__features_carry(g, m)) != NCF_OK || (rc = ncf_model_set_ids(g, d)) != NCF_OK) goto done;
    ncf_model_free(m);
    *mp = g, g = NULL;
done:
    ncf_model_free(g);
    NCF_FREE(umap), NCF_FREE(imap);
    return rc;
}

/* Rows [GMF or MF][MLP][MF bias] into user (side 0) or item (1) k of m. */
/* Where row k of a side lives among the parameters: its GMF (or MF) part, MLP part and bias,
   each NULL where the model has none (a row's layout, [F][H][1], as ncf_row's). */
static void ncf__row_parts(const ncf_model *m, int side, int k, float **gmf, float **mlp, float **bias)
{
    const struct ncf__scratch *s = m->scratch;
    float *g = side ? m->gmf_item : m->gmf_user, *h = side ? m->mlp_item : m->mlp_user,
          *b = side ? m->item_bias : m->user_bias;
    *gmf = s->F ? g + (size_t)k * s->F : NULL, *mlp = s->H ? h + (size_t)k * s->H : NULL, *bias = b ? b + k : NULL;
}

static void ncf__put_side_row(ncf_model *m, int side, int k, const float *row)
{
    const struct ncf__scratch *s = m->scratch;
    float *g, *h, *b;
    ncf__row_parts(m, side, k, &g, &h, &b);
    if (g) memcpy(g, row, sizeof(float) * (size_t)s->F);
    if (h) memcpy(h, row + s->F, sizeof(float) * (size_t)s->H);
    if (b) *b = row[s->F + s->H];
}

/* A new id for ncf_model_add: its bytes, its number where the side's ids are integers, and
   which of the caller's ids it is. */
typedef struct {
    const char *id;
    size_t len;
    int64_t num;
    int given;
} ncf__new_id;

static int ncf__cmp_new_text(const void *a, const void *b)
{
    const ncf__new_id *x = (const ncf__new_id *)a, *y = (const ncf__new_id *)b;
    int c = ncf__cmp_text(x->id, x->len, y->id, y->len);
    return c ? c : (x->given > y->given) - (x->given < y->given);
}
static int ncf__cmp_new_num(const void *a, const void *b)
{
    const ncf__new_id *x = (const ncf__new_id *)a, *y = (const ncf__new_id *)b;
    return x->num != y->num ? (x->num > y->num) - (x->num < y->num) : (x->given > y->given) - (x->given < y->given);
}

/* A dataset of m's ids with c new ids of one side (ascending, each once) merged in at their
   places (a side whose ids were given out of order takes them at its end), and m's rated
   items as its training positives, renumbered: what ncf_model_grow grows m to, all at once. */
static int ncf__ids_plus(const ncf_model *m, int side, const ncf__new_id *add, int c, ncf_dataset *d)
{
    ncf__ids t[2];
    int n[2], i, j, k, u, s, rc = NCF_OK;
    int32_t *map = NULL, *src = NULL; /* old index -> new; new index -> old (or -1 - j: new id j) */
    int64_t total = 0;
    memset(d, 0, sizeof *d);
    t[0] = ncf__model_ids(m, 0), t[1] = ncf__model_ids(m, 1);
    n[!side] = t[!side].n, n[side] = t[side].n + c;
    map = NCF__NEW(int32_t, (size_t)t[side].n + 1), src = NCF__NEW(int32_t, (size_t)n[side]);
    if (!map || !src) {
        NCF_FREE(map), NCF_FREE(src);
        return ncf__fail(NCF_ERR_NOMEM, "ncf_model_add: out of memory for %d ids", n[side]);
    }
    for (i = j = k = 0; k < n[side]; k++) { /* the merge */
        int take_new = j < c &&
            (i == t[side].n ||
             (!t[side].order &&
              (t[side].text ? ncf__cmp_text(t[side].text + t[side].at[i], (size_t)(t[side].at[i + 1] - t[side].at[i]),
                                            add[j].id, add[j].len) > 0
                            : t[side].num[i] > add[j].num)));
        if (take_new) src[k] = -1 - j++;
        else map[i] = k, src[k] = i++;
    }
    d->num_users = n[0], d->num_items = n[1];
    for (s = 0; s < 2 && rc == NCF_OK; s++) { /* each side's ids, side's merged */
        int extra = s == side;
        if (t[s].text) {
            int64_t bytes = t[s].at[t[s].n], *at_s = NCF__NEW(int64_t, (size_t)n[s] + 1);
            char *text;
            for (j = 0; extra && j < c; j++) bytes += (int64_t)add[j].len;
            text = NCF__NEW(char, bytes ? bytes : 1);
            if (s) d->item_text = text, d->item_text_at = at_s;
            else d->user_text = text, d->user_text_at = at_s;
            if (!text || !at_s) {
                rc = ncf__fail(NCF_ERR_NOMEM, "ncf_model_add: out of memory for the ids");
                break;
            }
            for (k = 0, at_s[0] = 0; k < n[s]; k++) {
                int o = extra ? src[k] : k;
                const char *p = o < 0 ? add[-1 - o].id : t[s].text + t[s].at[o];
                size_t l = o < 0 ? add[-1 - o].len : (size_t)(t[s].at[o + 1] - t[s].at[o]);
                memcpy(text + at_s[k], p, l), at_s[k + 1] = at_s[k] + (int64_t)l;
            }
        } else {
            int64_t *raw = NCF__NEW(int64_t, (size_t)n[s]);
            if (s) d->raw_item = raw;
            else d->raw_user = raw;
            if (!raw) {
                rc = ncf__fail(NCF_ERR_NOMEM, "ncf_model_add: out of memory for the ids");
                break;
            }
            for (k = 0; k < n[s]; k++) {
                int o = extra ? src[k] : k;
                raw[k] = o < 0 ? add[-1 - o].num : t[s].num[o];
            }
        }
    }
    for (u = 0; rc == NCF_OK && u < m->cfg.num_users; u++) { /* the rated items, as training positives */
        ncf__rated_cursor q;
        for (ncf__rated_from(&q, m, u, 0); q.next < INT32_MAX; ncf__rated_step(&q)) total++;
    }
    if (rc == NCF_OK) {
        d->user_ptr = NCF__NEW(int64_t, (size_t)n[0] + 1), d->items = NCF__NEW(int32_t, total ? total : 1);
        d->test_item = NCF__NEW(int32_t, (size_t)n[0]);
        if (!d->user_ptr || !d->items || !d->test_item) rc = ncf__fail(NCF_ERR_NOMEM, "ncf_model_add: out of memory");
    }
    for (u = 0, total = 0; rc == NCF_OK && u < n[0]; u++) { /* (a map keeps each list ascending) */
        int o = side ? u : src[u];
        if (u == 0) d->user_ptr[0] = 0;
        d->test_item[u] = -1;
        if (o >= 0) {
            ncf__rated_cursor q;
            for (ncf__rated_from(&q, m, o, 0); q.next < INT32_MAX; ncf__rated_step(&q))
                d->items[total++] = side ? map[q.next] : q.next;
        }
        d->user_ptr[u + 1] = total;
    }
    d->num_train = total;
    NCF_FREE(map), NCF_FREE(src);
    return rc;
}

NCFDEF int ncf_model_add(ncf_model **mp, int side, const char *const *ids, const float *rows, int n)
{
    ncf_dataset d;
    ncf__ids t;
    ncf__new_id *add = NULL;
    int j, c = 0, r, R, rc;
    if (!mp || !*mp || (side != 0 && side != 1) || !ids || !rows || n < 1)
        return ncf__fail(NCF_ERR_ARG,
                         "ncf_model_add: need a model, side 0 (users) or 1 (items), n >= 1 ids and their rows");
    if ((rc = ncf__writable(*mp, "ncf_model_add")) != NCF_OK) return rc;
    if (!ncf__has_ids(*mp)) return ncf__fail(NCF_ERR_ARG, "ncf_model_add: the model holds no ids (ncf_model_set_ids)");
    R = ncf_row_size(*mp), t = ncf__model_ids(*mp, side);
    if (!(add = NCF__NEW(ncf__new_id, (size_t)n))) return ncf__fail(NCF_ERR_NOMEM, "ncf_model_add: out of memory");
    for (j = 0; j < n; j++) { /* every id and row checked before anything changes */
        size_t len = ids[j] ? strlen(ids[j]) : 0;
        int64_t num = 0;
        if (len == 0 || len > NCF_MAX_ID_BYTES) {
            NCF_FREE(add);
            return ncf__fail(NCF_ERR_ARG, "ncf_model_add: ids[%d]: an id of 1 to %d bytes, not %lu", j,
                             NCF_MAX_ID_BYTES, (unsigned long)len);
        }
        for (r = 0; r < R; r++)
            if (!(rows[(size_t)j * R + r] >= -NCF__MAX_PARAM && rows[(size_t)j * R + r] <= NCF__MAX_PARAM)) {
                NCF_FREE(add);
                return ncf__fail(NCF_ERR_ARG,
                                 "ncf_model_add: rows[%d][%d] = %g is not a parameter (finite, within 1e6)", j, r,
                                 (double)rows[(size_t)j * R + r]);
            }
        if (ncf__ids_find(&t, ids[j], len) >= 0) continue; /* known: its rows replaced below */
        if (!t.text && !ncf__plain_int(ids[j], ids[j] + len, &num)) {
            NCF_FREE(add);
            return ncf__fail(NCF_ERR_ARG, "ncf_model_add: the model's %s ids are integers; '%s' is not one",
                             side ? "item" : "user", ncf__shown(ids[j], ids[j] + len));
        }
        add[c].id = ids[j], add[c].len = len, add[c].num = num, add[c++].given = j;
    }
    if (c) { /* the new ids ascending, each once; one grow for them all */
        int k;
        ncf__heap_sort((char *)add, (size_t)c, sizeof *add, t.text ? ncf__cmp_new_text : ncf__cmp_new_num);
        for (j = k = 0; j < c; j++)
            if (!k ||
                (t.text ? ncf__cmp_text(add[k - 1].id, add[k - 1].len, add[j].id, add[j].len)
                        : add[k - 1].num != add[j].num))
                add[k++] = add[j];
        c = k;
        rc = ncf__ids_plus(*mp, side, add, c, &d);
        if (rc == NCF_OK) rc = ncf_model_grow(mp, &d);
        ncf_dataset_free(&d);
    }
    NCF_FREE(add);
    if (rc != NCF_OK) return rc;
    t = ncf__model_ids(*mp, side);
    for (j = 0; j < n; j++) /* (in the order given: an id given twice keeps its last rows) */
        ncf__put_side_row(*mp, side, ncf__ids_find(&t, ids[j], strlen(ids[j])), rows + (size_t)j * R);
    ncf_model_params_changed(*mp);
    return NCF_OK;
}
#endif

/* ---- >>features (src/features.c) ------------------------------------------------------------- */
/* Side features: a file of them read as logs are; each entity's input vector the sum of its id
   embedding and the weighted mean of its features' embeddings, trained through the model's
   own gradients; the vocabulary and embeddings kept in the model file; new entities served
   from their features alone. */

#ifndef NCF_INFERENCE_ONLY

NCFDEF ncf_features_opts ncf_features_opts_default(void)
{
    ncf_features_opts o;
    memset(&o, 0, sizeof o);
    o.token_sep = "|";
    return o;
}

NCFDEF void ncf_features_free(ncf_features *f)
{
    if (!f) return;
    NCF_FREE(f->ids), NCF_FREE(f->ids_at), NCF_FREE(f->vocab), NCF_FREE(f->vocab_at);
    NCF_FREE(f->ptr), NCF_FREE(f->feat), NCF_FREE(f->weight);
    memset(f, 0, sizeof *f);
}

/* ---- >>features-read: the reader ---------------------------------------------------------------- */

#define NCF__FEATURE_COLS 64 /* feature columns a file names (u.item has 19) */

typedef struct {
    int id, weight;                                     /* 0-based fields; weight -1: none */
    int n, col[NCF__FEATURE_COLS];                      /* the feature columns */
    char name[NCF__FEATURE_COLS][NCF_MAX_ID_BYTES + 1]; /* each one's name (header, or number) */
} ncf__fcols;

/* Entries read: entity, token (intern numbers) and weight, growing by doubling. */
typedef struct {
    int32_t *ent, *tok;
    float *w;
    int64_t n, cap;
} ncf__entries;

static int ncf__entries_add(ncf__entries *E, int32_t e, int32_t t, float w)
{
    if (E->n == E->cap) {
        int64_t cap = E->cap ? 2 * E->cap : 4096;
        int32_t *a = (int32_t *)NCF_REALLOC(E->ent, sizeof(int32_t) * (size_t)cap), *b;
        float *c;
        if (!a) return 0;
        E->ent = a;
        if (!(b = (int32_t *)NCF_REALLOC(E->tok, sizeof(int32_t) * (size_t)cap))) return 0;
        E->tok = b;
        if (!(c = (float *)NCF_REALLOC(E->w, sizeof(float) * (size_t)cap))) return 0;
        E->w = c, E->cap = cap;
    }
    E->ent[E->n] = e, E->tok[E->n] = t, E->w[E->n++] = w;
    return 1;
}

static void ncf__entries_free(ncf__entries *E) { NCF_FREE(E->ent), NCF_FREE(E->tok), NCF_FREE(E->w); }

/* Header names a features file's columns go by (lower case, letters and digits only). */
static int ncf__feature_name(const char *norm)
{
    return ncf__has_word("genres genre tags tag features feature categories category attributes attribute", norm);
}
static int ncf__weight_name(const char *norm) { return ncf__has_word("weight weights relevance score value", norm); }

/* Field k of the first record's name, normalized, or "" past its fields. */
static void ncf__head_name(const ncf__sample *S, int k, char *norm, size_t size)
{
    int esc;
    norm[0] = 0;
    if (k < S->nf[0] && k < NCF__MAX_FIELDS) ncf__norm_name(ncf__value(S->first[k], &esc), norm, size);
}

/* The column named by one item of the columns spec (a number, or a header name). */
static int ncf__spec_column(const char *name, const char *s, const char *e, const ncf__sample *S, int header)
{
    int64_t v;
    int k;
    char want[64], norm[64];
    ncf__span w;
    if (ncf__int_field(s, e, &v) == 1) {
        if (v < 1 || v > NCF__MAX_FIELDS)
            return ncf__fail(NCF_ERR_ARG, "%s: column %lld: columns are numbered 1 to %d", name, (long long)v,
                             NCF__MAX_FIELDS);
        return (int)v - 1;
    }
    w.s = s, w.e = e;
    ncf__norm_name(w, want, sizeof want);
    for (k = 0; header && k < S->nf[0] && k < NCF__MAX_FIELDS; k++) {
        ncf__head_name(S, k, norm, sizeof norm);
        if (norm[0] && !strcmp(norm, want)) return k;
    }
    return ncf__fail(NCF_ERR_ARG, "%s: no column named '%s'%s", name, ncf__shown(s, e),
                     header ? "" : " (the file has no header: give column numbers)");
}

/* A column's name for its "name=value" features: the header's as written, or its number. */
static void ncf__col_name(const ncf__sample *S, int header, int k, char *out)
{
    int esc, n;
    ncf__span v;
    if (!header || k >= S->nf[0] || k >= NCF__MAX_FIELDS) {
        snprintf(out, NCF_MAX_ID_BYTES + 1, "%d", k + 1); /* (at most 2 digits: fits) */
        return;
    }
    v = ncf__value(S->first[k], &esc);
    n = esc ? ncf__unescape(v, out) : (int)(v.e - v.s > NCF_MAX_ID_BYTES ? NCF_MAX_ID_BYTES : v.e - v.s);
    if (n < 0) n = NCF_MAX_ID_BYTES;
    if (!esc) memcpy(out, v.s, (size_t)n);
    out[n] = 0;
}

static int ncf__add_col(const char *name, ncf__fcols *c, int k)
{
    if (c->n == NCF__FEATURE_COLS)
        return ncf__fail(NCF_ERR_ARG, "%s: more than %d feature columns", name, NCF__FEATURE_COLS);
    c->col[c->n++] = k;
    return NCF_OK;
}

/* The columns spec's item at p: [*s, *e) with its "weight:" (*weight) taken off; returns the
   next item's start (the spec's end after the last). */
static const char *ncf__spec_item(const char *p, const char **s, const char **e, int *weight)
{
    *weight = !strncmp(p, "weight:", 7);
    if (*weight) p += 7;
    for (*s = p, *e = p; **e && **e != ','; (*e)++) {}
    return **e ? *e + 1 : *e;
}

/* The columns from the spec "ID,FEATURE...[,weight:W]", or found by the header's names. */
static int ncf__feature_cols(const char *name, const char *spec, const ncf__sample *S, int header, ncf__fcols *c)
{
    int k, rc;
    char norm[64];
    memset(c, 0, sizeof *c);
    c->weight = -1;
    if (!spec || !*spec) {
        c->id = 0;
        for (k = 1; header && k < S->nf[0] && k < NCF__MAX_FIELDS; k++) {
            ncf__head_name(S, k, norm, sizeof norm);
            if (ncf__feature_name(norm) && !c->n) c->col[c->n++] = k;
            else if (ncf__weight_name(norm) && c->weight < 0) c->weight = k;
        }
        if (!c->n) c->col[c->n++] = 1;
    } else {
        const char *next = spec, *p, *e, *dash;
        int first = 1, weight;
        while (*next) {
            next = ncf__spec_item(next, &p, &e, &weight);
            dash = p;
            while (dash < e && *dash != '-') dash++;
            if (p == e) return ncf__fail(NCF_ERR_ARG, "%s: columns '%s': an empty item", name, spec);
            if (first || weight || dash == e || dash == p) {
                if ((rc = ncf__spec_column(name, p, e, S, header)) < 0) return rc;
                if (first) c->id = rc;
                else if (weight) c->weight = rc;
                else if ((rc = ncf__add_col(name, c, rc)) != NCF_OK) return rc;
            } else { /* a range "6-24" */
                int64_t a, b, j;
                if (ncf__int_field(p, dash, &a) != 1 || ncf__int_field(dash + 1, e, &b) != 1 || a < 1 || b < a ||
                    b > NCF__MAX_FIELDS)
                    return ncf__fail(NCF_ERR_ARG, "%s: columns '%s': '%s' is not a range of columns 1 to %d", name,
                                     spec, ncf__shown(p, e), NCF__MAX_FIELDS);
                for (j = a; j <= b; j++)
                    if ((rc = ncf__add_col(name, c, (int)j - 1)) != NCF_OK) return rc;
            }
            first = 0;
        }
        if (!c->n) return ncf__fail(NCF_ERR_ARG, "%s: columns '%s' name no feature column", name, spec);
    }
    for (k = 0; k < c->n; k++) ncf__col_name(S, header, c->col[k], c->name[k]);
    return NCF_OK;
}

/* Whether the first record names columns: one the spec asks for by name, or a known name. */
static int ncf__features_header(const ncf__sample *S, const ncf_features_opts *o)
{
    int k;
    char norm[64];
    if (o->header) return o->header == NCF_HEADER_YES;
    if (o->columns) {
        const char *next = o->columns, *p, *e;
        int weight;
        int64_t v;
        while (*next) {
            next = ncf__spec_item(next, &p, &e, &weight);
            if (e > p && ncf__int_field(p, e, &v) != 1 && !memchr(p, '-', (size_t)(e - p))) return 1;
        }
    }
    for (k = 0; k < S->nf[0] && k < NCF__MAX_FIELDS; k++) {
        ncf__head_name(S, k, norm, sizeof norm);
        if (norm[0] &&
            (ncf__alias_of(norm) >= 0 || ncf__feature_name(norm) || ncf__weight_name(norm) || !strcmp(norm, "id")))
            return 1;
    }
    return 0;
}

typedef struct {
    const char *name;
    ncf__cursor C;
    ncf__intern ids, toks;
    ncf__entries E;
    int trim;
} ncf__freader;

/* A field's text as the user wrote it into buf (quotes off, "" read as one): its length, or
   -1 past NCF_MAX_ID_BYTES. Blanks around an unquoted field stay unless trim. */
static int ncf__field_text(ncf__span f, int trim, char *buf)
{
    int esc;
    ncf__span v = ncf__value(f, &esc);
    int quoted = v.s > f.s && v.s[-1] == '"';
    if (!quoted && !trim) v = f;
    if (esc) return ncf__unescape(v, buf);
    if (v.e - v.s > NCF_MAX_ID_BYTES) return -1;
    memcpy(buf, v.s, (size_t)(v.e - v.s));
    return (int)(v.e - v.s);
}

static int ncf__token(ncf__freader *R, int32_t e, const char *s, size_t len, float w)
{
    int64_t t;
    while (len && ncf__blank(*s)) s++, len--;
    while (len && ncf__blank(s[len - 1])) len--;
    if (!len) return NCF_OK;
    if ((t = ncf__intern_add(&R->toks, s, len)) < 0 || !ncf__entries_add(&R->E, e, (int32_t)t, w))
        return ncf__fail(NCF_ERR_NOMEM, "%s:%lld: out of memory for the features", R->name, (long long)R->C.line);
    return NCF_OK;
}

/* One record's features into the entries. */
static int ncf__record_features(ncf__freader *R, const ncf__fcols *c, const ncf__span *f, int nf, const char *sep,
                                const char *tsep)
{
    char buf[NCF_MAX_ID_BYTES + 1], tok[2 * NCF_MAX_ID_BYTES + 2];
    int n, k, rc, need = c->id > c->weight ? c->id : c->weight;
    int64_t e;
    float w = 1.0f;
    for (k = 0; k < c->n; k++) need = c->col[k] > need ? c->col[k] : need;
    if (nf <= need)
        return ncf__fail(NCF_ERR_PARSE, "%s:%lld: %d fields (separator %s); the features need %d", R->name,
                         (long long)R->C.line, nf, ncf__sep_name(sep), need + 1);
    if ((n = ncf__field_text(f[c->id], R->trim, buf)) < 0)
        return ncf__fail(NCF_ERR_PARSE, "%s:%lld: an id longer than %d bytes", R->name, (long long)R->C.line,
                         NCF_MAX_ID_BYTES);
    if (n == 0 || memchr(buf, 0, (size_t)n))
        return ncf__fail(NCF_ERR_PARSE, "%s:%lld: %s id", R->name, (long long)R->C.line,
                         n ? "a NUL byte in the" : "no");
    {
        int64_t v;
        const char *s = buf, *t = buf + n; /* a plain integer, blanks around it, is the number */
        while (s < t && ncf__blank(*s)) s++;
        while (t > s && ncf__blank(t[-1])) t--;
        if (ncf__plain_int(s, t, &v) && (s > buf || t < buf + n)) memmove(buf, s, (size_t)(t - s)), n = (int)(t - s);
    }
    if ((e = ncf__intern_add(&R->ids, buf, (size_t)n)) < 0)
        return ncf__fail(NCF_ERR_NOMEM, "%s:%lld: out of memory for the ids", R->name, (long long)R->C.line);
    if (c->weight >= 0) {
        int esc;
        ncf__span v = ncf__value(f[c->weight], &esc);
        double x = ncf__num_field(v.s, v.e) ? ncf__num_value(v) : -1.0;
        if (!(x >= 0 && x <= 1e30))
            return ncf__fail(NCF_ERR_PARSE, "%s:%lld: weight '%s' is not a number from 0 to 1e30", R->name,
                             (long long)R->C.line, ncf__shown(v.s, v.e));
        w = (float)x;
    }
    for (k = 0; k < c->n; k++) {
        if ((n = ncf__field_text(f[c->col[k]], 1, buf)) < 0)
            return ncf__fail(NCF_ERR_PARSE, "%s:%lld: a feature field longer than %d bytes", R->name,
                             (long long)R->C.line, NCF_MAX_ID_BYTES);
        if (memchr(buf, 0, (size_t)n))
            return ncf__fail(NCF_ERR_PARSE, "%s:%lld: a NUL byte in a feature", R->name, (long long)R->C.line);
        if (c->n == 1) { /* tokens as written, split at token_sep */
            size_t tl = tsep ? strlen(tsep) : 0;
            int a = 0, b;
            for (b = 0; b <= n; b++)
                if (b == n || (tl && b + (int)tl <= n && !memcmp(buf + b, tsep, tl))) {
                    if ((rc = ncf__token(R, (int32_t)e, buf + a, (size_t)(b - a), w)) != NCF_OK) return rc;
                    a = b + (int)tl, b += tl ? (int)tl - 1 : 0;
                }
        } else if (n == 1 && buf[0] == '1') { /* a flag */
            if ((rc = ncf__token(R, (int32_t)e, c->name[k], strlen(c->name[k]), w)) != NCF_OK) return rc;
        } else if (n && !(n == 1 && buf[0] == '0')) { /* a category: name=value */
            size_t l = strlen(c->name[k]);
            memcpy(tok, c->name[k], l), tok[l] = '=', memcpy(tok + l + 1, buf, (size_t)n);
            if (l + 1 + (size_t)n > NCF_MAX_ID_BYTES)
                return ncf__fail(NCF_ERR_PARSE, "%s:%lld: feature '%s=...' is longer than %d bytes", R->name,
                                 (long long)R->C.line, c->name[k], NCF_MAX_ID_BYTES);
            if ((rc = ncf__token(R, (int32_t)e, tok, l + 1 + (size_t)n, w)) != NCF_OK) return rc;
        }
    }
    return NCF_OK;
}

typedef struct {
    int32_t tok;
    float w;
} ncf__fentry;

static int ncf__cmp_fentry(const void *a, const void *b)
{
    const ncf__fentry *x = (const ncf__fentry *)a, *y = (const ncf__fentry *)b;
    return (x->tok > y->tok) - (x->tok < y->tok);
}

/* The table from what was read: entities in reading order, the vocabulary sorted, each
   entity's features ascending and merged. */
static int ncf__features_build(ncf_features *f, ncf__freader *R)
{
    int64_t *rank = NULL, *fill = NULL, j, k;
    ncf__fentry *tmp = NULL;
    int e, rc;
    f->num_entities = (int)R->ids.n, f->num_features = (int)R->toks.n;
    if ((rc = ncf__intern_sort(&R->toks, &f->vocab, &f->vocab_at, &rank)) != NCF_OK) return rc;
    f->ids = NCF__NEW(char, R->ids.used ? R->ids.used : 1), f->ids_at = NCF__NEW(int64_t, R->ids.n + 1);
    f->ptr = NCF__ZNEW(int64_t, R->ids.n + 1), fill = NCF__NEW(int64_t, R->ids.n + 1);
    tmp = NCF__ZNEW(ncf__fentry, R->E.n ? R->E.n : 1); /* (zeroed: for the analyzer) */
    if (!f->ids || !f->ids_at || !f->ptr || !fill || !tmp) {
        rc = ncf__fail(NCF_ERR_NOMEM, "%s: out of memory for %lld features", R->name, (long long)R->E.n);
        goto done;
    }
    if (R->ids.used) memcpy(f->ids, R->ids.bytes, (size_t)R->ids.used);
    for (k = 0; k <= R->ids.n; k++) f->ids_at[k] = R->ids.n ? R->ids.at[k] : 0;
    for (j = 0; j < R->E.n; j++) f->ptr[R->E.ent[j] + 1]++;
    for (e = 0; e < f->num_entities; e++) f->ptr[e + 1] += f->ptr[e];
    memcpy(fill, f->ptr, sizeof(int64_t) * (size_t)(R->ids.n + 1));
    for (j = 0; j < R->E.n; j++) { /* (stable: a record's order kept) */
        ncf__fentry *x = &tmp[fill[R->E.ent[j]]++];
        x->tok = (int32_t)rank[R->E.tok[j]], x->w = R->E.w[j];
    }
    for (e = 0, k = 0; e < f->num_entities; e++) { /* sorted, repeats summed, compacted */
        int64_t a = f->ptr[e], b = f->ptr[e + 1], i;
        ncf__heap_sort((char *)(tmp + a), (size_t)(b - a), sizeof *tmp, ncf__cmp_fentry);
        f->ptr[e] = k;
        for (i = a; i < b; i++)
            if (k > f->ptr[e] && tmp[k - 1].tok == tmp[i].tok) tmp[k - 1].w += tmp[i].w;
            else tmp[k++] = tmp[i];
    }
    f->ptr[f->num_entities] = k;
    f->feat = NCF__NEW(int32_t, k ? k : 1), f->weight = NCF__NEW(float, k ? k : 1);
    if (!f->feat || !f->weight) {
        rc = ncf__fail(NCF_ERR_NOMEM, "%s: out of memory for %lld features", R->name, (long long)k);
        goto done;
    }
    for (j = 0; j < k; j++) f->feat[j] = tmp[j].tok, f->weight[j] = tmp[j].w;
done:
    NCF_FREE(rank), NCF_FREE(fill), NCF_FREE(tmp);
    return rc;
}

NCFDEF int ncf_load_features_mem(ncf_features *f, const char *name, const void *buf, size_t len,
                                 const ncf_features_opts *opts)
{
    ncf_features_opts dflt = ncf_features_opts_default();
    const ncf_features_opts *o = opts ? opts : &dflt;
    const char *p = (const char *)buf, *end;
    ncf__freader R;
    ncf__sample S;
    ncf__fcols cols;
    ncf__span fl[NCF__MAX_FIELDS];
    char sep[4];
    int header, nf, rc = NCF_OK;
    if (!f || (!buf && len)) return ncf__fail(NCF_ERR_ARG, "ncf_load_features: NULL features or buffer");
    memset(f, 0, sizeof *f);
    if (!name) name = "(features)";
    if (o->header < NCF_HEADER_AUTO || o->header > NCF_HEADER_NO || (o->trim_ids != 0 && o->trim_ids != 1))
        return ncf__fail(NCF_ERR_ARG, "%s: header %d or trim_ids %d is not one of its values", name, o->header,
                         o->trim_ids);
    if (o->sep && (!*o->sep || strlen(o->sep) > 2))
        return ncf__fail(NCF_ERR_ARG, "%s: a separator of 1 or 2 bytes, not '%s'", name, o->sep);
    end = p + len, p += ncf__bom_bytes(p, len);
    if (o->sep) strcpy(sep, o->sep); /* (1 or 2 bytes: fits) */
    else ncf__find_sep(p, end, sep);
    ncf__take_sample(p, end, sep, &S);
    if (!S.n) return ncf__fail(NCF_ERR_DATA, "%s: no records", name);
    header = ncf__features_header(&S, o);
    if ((rc = ncf__feature_cols(name, o->columns, &S, header, &cols)) != NCF_OK) return rc;
    memset(&R, 0, sizeof R);
    R.name = name, R.trim = o->trim_ids;
    R.C.p = p, R.C.end = end, R.C.line = 0, R.C.next = 1;
    while ((nf = ncf__record(&R.C, sep, fl, NCF__MAX_FIELDS)) != -1) {
        if (nf == 0) continue;
        if (nf == -2) {
            rc = ncf__fail(NCF_ERR_PARSE, "%s:%lld: a quote opened and never closed", name, (long long)R.C.line);
            break;
        }
        if (header && R.C.line == 1) {
            header = 0;
            continue;
        }
        f->records++;
        if ((rc = ncf__record_features(&R, &cols, fl, nf, sep, o->token_sep)) != NCF_OK) break;
    }
    if (rc == NCF_OK && !R.ids.n) rc = ncf__fail(NCF_ERR_DATA, "%s: no records", name);
    if (rc == NCF_OK) rc = ncf__features_build(f, &R);
    ncf__intern_free(&R.ids), ncf__intern_free(&R.toks), ncf__entries_free(&R.E);
    if (rc != NCF_OK) ncf_features_free(f);
    return rc;
}

#ifndef NCF_NO_STDIO
NCFDEF int ncf_load_features(ncf_features *f, const char *path, const ncf_features_opts *opts)
{
    char *buf = NULL;
    size_t len = 0;
    int rc;
    if (!f || !path) return ncf__fail(NCF_ERR_ARG, "ncf_load_features: NULL features or path");
    memset(f, 0, sizeof *f);
    if ((rc = ncf__read_file(path, &buf, &len, NULL)) != NCF_OK) return rc;
    rc = ncf_load_features_mem(f, path, buf, len, opts);
    NCF_FREE(buf);
    return rc;
}
#endif

NCFDEF int ncf_features_from_csr(ncf_features *f, int n, const char *const *ids, int num_features,
                                 const char *const *names, const int64_t *ptr, const int32_t *idx, const float *w)
{
    ncf__freader R;
    int64_t j;
    int k, rc = NCF_OK;
    if (!f) return ncf__fail(NCF_ERR_ARG, "ncf_features_from_csr: NULL features");
    memset(f, 0, sizeof *f);
    if (n < 1 || !ids || num_features < 0 || (num_features && !names) || !ptr || (ptr[n] && !idx) || ptr[0] != 0)
        return ncf__fail(NCF_ERR_ARG, "ncf_features_from_csr: need n >= 1 ids, names of the columns, ptr from 0");
    memset(&R, 0, sizeof R);
    R.name = "ncf_features_from_csr";
    for (k = 0; k < num_features && rc == NCF_OK; k++) { /* every name, in column order, each once */
        size_t l = names[k] ? strlen(names[k]) : 0;
        int64_t t = l && l <= NCF_MAX_ID_BYTES ? ncf__intern_add(&R.toks, names[k], l) : -2;
        if (t == -2)
            rc = ncf__fail(NCF_ERR_ARG, "ncf_features_from_csr: names[%d]: 1 to %d bytes", k, NCF_MAX_ID_BYTES);
        else if (t < 0) rc = ncf__fail(NCF_ERR_NOMEM, "ncf_features_from_csr: out of memory");
        else if (t != k) rc = ncf__fail(NCF_ERR_ARG, "ncf_features_from_csr: names[%d] '%s' given twice", k, names[k]);
    }
    for (k = 0; k < n && rc == NCF_OK; k++) {
        size_t l = ids[k] ? strlen(ids[k]) : 0;
        int64_t e;
        if (!l || l > NCF_MAX_ID_BYTES || ptr[k + 1] < ptr[k]) {
            rc = ncf__fail(NCF_ERR_ARG, "ncf_features_from_csr: row %d: an id of 1 to %d bytes, ptr not falling", k,
                           NCF_MAX_ID_BYTES);
            break;
        }
        if ((e = ncf__intern_add(&R.ids, ids[k], l)) < 0)
            rc = ncf__fail(NCF_ERR_NOMEM, "ncf_features_from_csr: out of memory");
        for (j = ptr[k]; rc == NCF_OK && j < ptr[k + 1]; j++) {
            float x = w ? w[j] : 1.0f;
            if (idx[j] < 0 || idx[j] >= num_features || !(x >= 0 && x <= 1e30f))
                rc = ncf__fail(NCF_ERR_ARG, "ncf_features_from_csr: entry %lld: column %d of %d, weight %g",
                               (long long)j, (int)idx[j], num_features, (double)x);
            else if (!ncf__entries_add(&R.E, (int32_t)e, idx[j], x))
                rc = ncf__fail(NCF_ERR_NOMEM, "ncf_features_from_csr: out of memory");
        }
    }
    f->records = n;
    if (rc == NCF_OK) rc = ncf__features_build(f, &R);
    ncf__intern_free(&R.ids), ncf__intern_free(&R.toks), ncf__entries_free(&R.E);
    if (rc != NCF_OK) ncf_features_free(f);
    return rc;
}

/* Whether f is a table ncf_load_features could have made (a caller may have filled one). */
static int ncf__features_valid(const ncf_features *f, const char *what)
{
    int64_t j;
    int k;
    if (!f || f->num_entities < 0 || f->num_features < 0 || !f->ids_at || !f->ptr || !f->vocab_at ||
        (f->num_features && !f->vocab) || (f->ptr[f->num_entities] && (!f->feat || !f->weight)))
        return ncf__fail(NCF_ERR_ARG, "%s: features not loaded (ncf_load_features)", what);
    for (k = 0; k < f->num_entities; k++)
        if (f->ptr[k + 1] < f->ptr[k] || f->ids_at[k + 1] <= f->ids_at[k] ||
            f->ids_at[k + 1] - f->ids_at[k] > NCF_MAX_ID_BYTES)
            return ncf__fail(NCF_ERR_ARG, "%s: features entity %d: its id or features are out of order", what, k);
    for (j = 0; j < f->ptr[f->num_entities]; j++)
        if (f->feat[j] < 0 || f->feat[j] >= f->num_features || !(f->weight[j] >= 0 && f->weight[j] <= 1e30f))
            return ncf__fail(NCF_ERR_ARG, "%s: features entry %lld: feature %d of %d, weight %g", what, (long long)j,
                             (int)f->feat[j], f->num_features, (double)f->weight[j]);
    return NCF_OK;
}

/* ---- >>features-model: composed rows, their gradients, the features' own optimizer ------------- */

#define NCF__MIN_FEATURE_SCALE (1.0 / 64) /* ncf_model_set_features' scale */
#define NCF__MAX_FEATURE_SCALE 64.0

/* One side's features in a model. The vocabulary and its embeddings serve (a loaded or grown
   model has them); the rest exists while the side trains (ncf_model_set_features). Rows are
   ncf_row_size floats, [GMF or MF][MLP][MF bias], as ncf_row's. */
typedef struct {
    int n, no_id; /* the vocabulary's size; a features-only side */
    float scale;  /* the features' part of a vector: their weighted mean times this */
    char *text;   /* tokens as written, ascending by bytes */
    int64_t *at;  /* [n + 1] */
    float *emb;   /* [n][R] */
    int ents;     /* the side's entities when set (0: serving only) */
    int64_t *ptr; /* [ents + 1]: entity e's features idx[ptr[e] .. ptr[e+1]) */
    int32_t *idx;
    float *w;                           /* weights normalized to sum 1 */
    uint8_t *has_id;                    /* [ents]: the entity's id embedding is part of its vector */
    float *id;                          /* [ents][R]: the id embeddings */
    float *g_emb, *g_id;                /* their gradients, summed over a step */
    float *m_emb, *v_emb, *m_id, *v_id; /* Adam's moments (NULL for SGD) */
    uint8_t *fflag;                     /* [n]: feature in flist */
    int32_t *flist, *elist;             /* a step's features, and its entities with an id embedding */
    int nf, ne;
} ncf__fside;

struct ncf__features {
    ncf__fside side[2];
};

static void ncf__fside_train_free(ncf__fside *f)
{
    NCF_FREE(f->ptr), NCF_FREE(f->idx), NCF_FREE(f->w), NCF_FREE(f->has_id), NCF_FREE(f->id);
    NCF_FREE(f->g_emb), NCF_FREE(f->g_id), NCF_FREE(f->m_emb), NCF_FREE(f->v_emb), NCF_FREE(f->m_id);
    NCF_FREE(f->v_id), NCF_FREE(f->fflag), NCF_FREE(f->flist), NCF_FREE(f->elist);
    f->ptr = NULL, f->idx = NULL, f->w = NULL, f->has_id = NULL, f->id = f->g_emb = f->g_id = NULL;
    f->m_emb = f->v_emb = f->m_id = f->v_id = NULL, f->fflag = NULL, f->flist = f->elist = NULL;
    f->ents = f->nf = f->ne = 0;
}

static void ncf__fside_free(ncf__fside *f)
{
    ncf__fside_train_free(f);
    NCF_FREE(f->text), NCF_FREE(f->at), NCF_FREE(f->emb);
    memset(f, 0, sizeof *f);
}

static void ncf__features_free(struct ncf__features *F)
{
    if (!F) return;
    ncf__fside_free(&F->side[0]), ncf__fside_free(&F->side[1]);
    NCF_FREE(F);
}

/* Side s of m's features, or NULL when it has none. */
static ncf__fside *ncf__fside_of(const ncf_model *m, int s)
{
    struct ncf__features *F = m && m->scratch ? m->scratch->feat : NULL;
    return F && F->side[s].at ? &F->side[s] : NULL;
}

static int ncf__has_features(const ncf_model *m) { return ncf__fside_of(m, 0) || ncf__fside_of(m, 1); }

/* Whether a side of m trains through its features. */
static int ncf__features_train_on(const ncf_model *m)
{
    int s;
    for (s = 0; s < 2; s++)
        if (ncf__fside_of(m, s) && ncf__fside_of(m, s)->ptr) return 1;
    return 0;
}

/* row[0..R) += w x[0..R) */
static void ncf__add_scaled(float *NCF__RESTRICT row, const float *NCF__RESTRICT x, float w, int R)
{
    int d;
    for (d = 0; d < R; d++) row[d] += w * x[d];
}

/* Entity e's composed row: its id embedding (if it has one) plus its features' weighted mean. */
static void ncf__compose_row(const ncf__fside *f, int R, int e, float *row)
{
    int64_t j;
    if (f->has_id[e]) memcpy(row, f->id + (size_t)e * R, sizeof(float) * (size_t)R);
    else memset(row, 0, sizeof(float) * (size_t)R);
    for (j = f->ptr[e]; j < f->ptr[e + 1]; j++) ncf__add_scaled(row, f->emb + (size_t)f->idx[j] * R, f->w[j], R);
}

/* Every entity of the training sides composed into the model's tables. */
static void ncf__compose_all(ncf_model *m, float *row)
{
    int s, e, R = ncf_row_size(m);
    for (s = 0; s < 2; s++) {
        const ncf__fside *f = ncf__fside_of(m, s);
        for (e = 0; f && f->ptr && e < f->ents; e++) ncf__compose_row(f, R, e, row), ncf__put_side_row(m, s, e, row);
    }
}

/* The gradient of row e of side s in the model's tables into g (cleared as it is read). */
static void ncf__take_row_grad(ncf_model *m, int s, int e, float *g)
{
    const struct ncf__scratch *sc = m->scratch;
    float *part[3], *x;
    int n[3], at = 0, k;
    ncf__row_parts(m, s, e, &part[0], &part[1], &part[2]);
    n[0] = sc->F, n[1] = sc->H, n[2] = 1, g[sc->F + sc->H] = 0;
    for (k = 0; k < 3; at += n[k++])
        if (part[k])
            x = ncf__grad_of(m, part[k]), memcpy(g + at, x, sizeof(float) * (size_t)n[k]),
            memset(x, 0, sizeof(float) * (size_t)n[k]);
}

/* The step's gradients of the composed rows (the batch's entities, listed by
   ncf_forward_backward) passed on to the id and feature embeddings, by the chain rule. */
static void ncf__pass_grads(ncf_model *m, float *g)
{
    const struct ncf__scratch *sc = m->scratch;
    int s, i, d, R = ncf_row_size(m);
    for (s = 0; s < 2; s++) {
        ncf__fside *f = ncf__fside_of(m, s);
        const int32_t *list = s ? sc->touched.item : sc->touched.user;
        int n = s ? sc->touched.nitem : sc->touched.nuser;
        if (!f || !f->ptr) continue;
        for (i = 0; i < n; i++) {
            int e = list[i];
            int64_t j;
            ncf__take_row_grad(m, s, e, g);
            if (f->has_id[e]) {
                float *gi = f->g_id + (size_t)e * R;
                for (d = 0; d < R; d++) gi[d] += g[d];
                f->elist[f->ne++] = e;
            }
            for (j = f->ptr[e]; j < f->ptr[e + 1]; j++) {
                int32_t k = f->idx[j];
                float *ge = f->g_emb + (size_t)k * R, w = f->w[j];
                for (d = 0; d < R; d++) ge[d] += w * g[d];
                if (!f->fflag[k]) f->fflag[k] = 1, f->flist[f->nf++] = k;
            }
        }
    }
}

/* Row p[0..R) by its gradient g (cleared): Adam with moments mm, vv, or SGD (mm NULL). */
static int ncf__fstep(float *p, float *g, float *mm, float *vv, int R, const ncf__adam_k *k)
{
    return mm ? ncf__adam_step(p, mm, vv, g, (size_t)R, k) : ncf__sgd_step(p, g, (size_t)R, k);
}

/* The listed id and feature rows stepped (step t's constants); nonzero when one went non-finite. */
static int ncf__features_update(ncf_model *m, int64_t t)
{
    ncf__adam_k k = ncf__adam_consts(m, t);
    int s, i, bad = 0, R = ncf_row_size(m);
    for (s = 0; s < 2; s++) {
        ncf__fside *f = ncf__fside_of(m, s);
        if (!f || !f->ptr) continue;
        for (i = 0; i < f->ne; i++) {
            size_t o = (size_t)f->elist[i] * R;
            bad |=
                ncf__fstep(f->id + o, f->g_id + o, f->m_id ? f->m_id + o : NULL, f->v_id ? f->v_id + o : NULL, R, &k);
        }
        for (i = 0; i < f->nf; i++) {
            size_t o = (size_t)f->flist[i] * R;
            f->fflag[f->flist[i]] = 0;
            bad |= ncf__fstep(f->emb + o, f->g_emb + o, f->m_emb ? f->m_emb + o : NULL, f->v_emb ? f->v_emb + o : NULL,
                              R, &k);
        }
        f->nf = f->ne = 0;
    }
    return bad;
}

static uint8_t *ncf__trained_entities(const ncf_dataset *d, int s);

/* ncf_update's units within a features step's region, each side's rows in groups counted from
   the batch's n, not from the rows listed, so that a thread arriving late counts them as the
   others did (ncf__rows_of_tables_phase). */
static void ncf__features_update_phase(ncf__ctx *x, ncf_model *m, int n, const ncf__adam_k *k, int *bad)
{
    int64_t g = NCF__CEIL_DIV(n, NCF__ROWS_PER_UNIT), lo, hi, u;
    while (ncf__claim(x, ncf__update_units(m, g), 1, &lo, &hi))
        for (u = lo; u < hi; u++)
            if (ncf__update_unit(m, u, g, k)) ncf__flag(bad, 1);
}

/* A features training's batch buffers and the examples it has trained. */
typedef struct {
    const ncf_sampler *smp;
    int epoch;
    int64_t first, end, pos;
    int32_t *u, *it;
    float *y, *row;
    ncf_progress_fn progress;
    void *ctx;
    double *sum;
} ncf__fbatch;

/* A features step's examples [at, at + n) drawn within the region, a run of the sampler's a
   unit (ncf_sampler_fill's own region would be a nested one, its threads made each call). */
static void ncf__features_draw(ncf__ctx *x, const ncf__fbatch *b, int64_t at, int n)
{
    int64_t lo, hi, c;
    while (ncf__claim(x, NCF__CEIL_DIV(n, NCF__RUN), 1, &lo, &hi))
        for (c = lo; c < hi; c++) {
            int j = (int)c * NCF__RUN;
            ncf__fill_rows(b->smp, b->epoch, at + j, n - j < NCF__RUN ? n - j : NCF__RUN, b->u + j, b->it + j, b->y + j,
                           NULL);
        }
}

/* The serial head of a features step: its entities composed into the model's tables. n: the
   batch's size. */
static void ncf__features_head(ncf_model *m, ncf__fbatch *b, int n)
{
    int s, i, R = ncf_row_size(m);
    for (s = 0; s < 2; s++) {
        const ncf__fside *f = ncf__fside_of(m, s);
        const int32_t *ids = s ? b->it : b->u;
        for (i = 0; f && f->ptr && i < n; i++)
            ncf__compose_row(f, R, ids[i], b->row), ncf__put_side_row(m, s, ids[i], b->row);
    }
}

/* Up to nsteps steps of a features training in one region, each: the head (serial), the model's
   forward and backward pass, the rows' gradients passed on to the id and feature embeddings
   (serial), the dense layers and the other side's rows stepped (ncf_update's units), then the
   id and feature rows (serial). The transposed kernels are made once: the dense updates keep
   them current. Returns the steps done; losses[i] and bad[i] say how step i went. */
static int ncf__features_block(ncf_model *m, ncf__fbatch *b, int nsteps, double *losses, int *bad)
{
    ncf__team team = NCF__TEAM_INIT;
    int B = m->cfg.batch_size, done = 0;
    int64_t t0 = m->step, pos0 = b->pos;
    team.pace = &m->scratch->pace, team.solo = team.pace->solo;
    NCF__PARALLEL(ncf__rows_parallel(m, B))
    {
        ncf__ctx x = ncf__join(&team);
        ncf__batch bt;
        int64_t lo, hi;
        double sum = *b->sum; /* (thread 0's, as progress is: another may be a step ahead) */
        int i, lead = 1;
#if NCF__TEAMS
        lead = omp_get_thread_num() == 0;
#endif
        memset(&bt, 0, sizeof bt);
        bt.users = b->u, bt.items = b->it, bt.labels = b->y;
        ncf__transpose_phase(&x, m);
        for (i = 0; i < nsteps;) {
            ncf__adam_k k = ncf__adam_consts(m, t0 + i + 1);
            int64_t at = pos0 + (int64_t)i * B;
            bt.n = (int)(b->end - at < B ? b->end - at : B);
            ncf__features_draw(&x, b, at, bt.n);
            while (ncf__claim(&x, 1, 1, &lo, &hi)) ncf__features_head(m, b, bt.n);
            ncf__rows_phase(&x, m, &bt, 1);
            ncf__sums_phase(&x, m, &bt, &losses[i]);
            ncf__rows_of_tables_phase(&x, m, bt.n, NULL, NULL); /* (listed: a failed step's are cleared) */
            if (!(losses[i] - losses[i] == 0.0)) break;
            while (ncf__claim(&x, 1, 1, &lo, &hi)) ncf__pass_grads(m, b->row);
            ncf__features_update_phase(&x, m, bt.n, &k, &bad[i]);
            while (ncf__claim(&x, 1, 1, &lo, &hi)) {
                struct ncf__scratch *s = m->scratch;
                s->touched.nuser = s->touched.nitem = 0, m->step++;
                if (ncf__features_update(m, m->step)) ncf__flag(&bad[i], 1);
            }
            if (lead) {
                int64_t seen = at + bt.n - b->first;
                sum += losses[i] * bt.n;
                if (b->progress && ((at - b->first) / B % 16 == 15 || at + bt.n == b->end))
                    b->progress(b->ctx, seen, b->end - b->first, sum / (double)seen);
            }
            if (ncf__flag_value(&bad[i++])) break;
        }
        if (lead) done = i, *b->sum = sum;
    }
    b->pos = pos0 + (int64_t)done * B < b->end ? pos0 + (int64_t)done * B : b->end;
    return done;
}

/* Examples [first, end) of the epoch with features, NCF__BLOCK steps a region
   (ncf__features_block): NeuMF with ml-100k's genres at 1.8x the steps a second of a region a
   step, MF and GMF at 0.93-1.05x (2 threads, AMD EPYC). The passing and the features' steps
   are serial: the same bits on any threads. */
static int ncf__features_train(ncf_model *m, const ncf_sampler *smp, int epoch, int64_t first, int64_t end,
                               ncf_progress_fn progress, void *ctx, double *sum)
{
    int B = m->cfg.batch_size, R = ncf_row_size(m), rc = NCF_OK;
    const ncf__fside *fi = ncf__fside_of(m, 1);
    uint8_t *warm = fi && fi->ptr && !smp->draw_only ? ncf__trained_entities(smp->data, 1) : NULL;
    ncf_sampler own = *smp; /* (negatives among the items training has: see ncf_sampler.draw_only) */
    double *losses = NCF__NEW(double, NCF__BLOCK);
    int *bad = NCF__NEW(int, NCF__BLOCK);
    ncf__fbatch b;
    memset(&b, 0, sizeof b);
    b.u = NCF__ZNEW(int32_t, B), b.it = NCF__ZNEW(int32_t, B),
    b.y = NCF__ZNEW(float, B); /* (zeroed: for the analyzer) */
    b.row = NCF__NEW(float, R);
    if (!b.u || !b.it || !b.y || !b.row || !losses || !bad || (fi && fi->ptr && !smp->draw_only && !warm))
        rc = ncf__fail(NCF_ERR_NOMEM, "out of memory for a batch of %d", B);
    else if (ncf__pending(m))
        rc = ncf__fail(NCF_ERR_ARG, "training a features model: rows from ncf_forward_backward wait for ncf_update");
    else rc = ncf__reserve(m, B);
    if (warm) own.draw_only = warm;
    b.smp = warm ? &own : smp, b.epoch = epoch, b.first = b.pos = first, b.end = end;
    b.progress = progress, b.ctx = ctx, b.sum = sum;
    while (rc == NCF_OK && b.pos < end) {
        int64_t steps = NCF__CEIL_DIV(end - b.pos, B);
        int nsteps = (int)(steps < NCF__BLOCK ? steps : NCF__BLOCK), done;
        memset(bad, 0, sizeof(int) * NCF__BLOCK);
        done = ncf__features_block(m, &b, nsteps, losses, bad);
        if (done > 0 && bad[done - 1]) rc = ncf__step_failed(m, losses[done - 1], 1);
        else if (done < nsteps) rc = ncf__step_failed(m, losses[done], 0);
    }
    if (b.row) ncf__compose_all(m, b.row), ncf_model_params_changed(m);
    NCF_FREE(b.u), NCF_FREE(b.it), NCF_FREE(b.y), NCF_FREE(b.row), NCF_FREE(warm), NCF_FREE(losses), NCF_FREE(bad);
    return rc;
}

/* Training entities of side s: with training positives in d. */
static uint8_t *ncf__trained_entities(const ncf_dataset *d, int s)
{
    int n = s ? d->num_items : d->num_users, k;
    int64_t j;
    uint8_t *t = NCF__ZNEW(uint8_t, n ? n : 1);
    if (!t) return NULL;
    if (s)
        for (j = 0; j < d->num_train; j++) t[d->items[j]] = 1;
    else
        for (k = 0; k < n; k++) t[k] = d->user_ptr[k + 1] > d->user_ptr[k];
    return t;
}

/* The model's entity of f's entity k, or -1 when it has none. */
static int ncf__entity_of(const ncf_model *m, const ncf_dataset *d, int s, const ncf_features *f, int k)
{
    ncf__ids t = ncf__has_ids(m) ? ncf__model_ids(m, s) : ncf__dataset_ids(d, s);
    return ncf__ids_find(&t, f->ids + f->ids_at[k], (size_t)(f->ids_at[k + 1] - f->ids_at[k]));
}

/* n zeroed floats (at least one: a zero-size block is no failure). */
static float *ncf__floats(size_t n) { return NCF__ZNEW(float, n ? n : 1); }

/* A side's vocabulary and embeddings (n tokens of R floats), room only. */
static int ncf__fside_alloc(ncf__fside *f, int n, int64_t text_bytes, int R)
{
    memset(f, 0, sizeof *f);
    f->n = n;
    f->text = NCF__NEW(char, text_bytes ? text_bytes : 1), f->at = NCF__NEW(int64_t, (size_t)n + 1);
    f->emb = ncf__floats((size_t)n * R);
    if (f->text && f->at && f->emb) return NCF_OK;
    ncf__fside_free(f);
    return ncf__fail(NCF_ERR_NOMEM, "out of memory for %d features", n);
}

/* The training state of side s from f's table: each entity's normalized features, which
   have an id embedding, the id embeddings (the model's rows less their features' part: the
   model scores as before), the gradients and moments. */
static int ncf__fside_train(ncf_model *m, int s, ncf__fside *x, const ncf_features *f, const ncf_dataset *d, int no_id)
{ /* (the weights held are normalized times the side's scale: composing and passing use them as they are) */
    int R = ncf_row_size(m), ents = s ? m->cfg.num_items : m->cfg.num_users, k, e, adam = m->adam_m != NULL;
    int32_t *of = NCF__NEW(int32_t, ents ? ents : 1);
    uint8_t *trained = ncf__trained_entities(d, s), *used = NCF__ZNEW(uint8_t, f->num_features ? f->num_features : 1);
    float *row = NCF__NEW(float, R);
    int64_t total = 0, j;
    int rc = NCF_OK;
    x->ents = ents, x->no_id = no_id;
    x->ptr = NCF__NEW(int64_t, (size_t)ents + 1), x->has_id = NCF__ZNEW(uint8_t, ents ? ents : 1);
    x->id = ncf__floats((size_t)ents * R), x->g_id = ncf__floats((size_t)ents * R);
    x->g_emb = ncf__floats((size_t)x->n * R);
    x->fflag = NCF__ZNEW(uint8_t, x->n ? x->n : 1), x->flist = NCF__NEW(int32_t, x->n ? x->n : 1);
    x->elist = NCF__NEW(int32_t, ents ? ents : 1);
    if (adam) {
        x->m_id = ncf__floats((size_t)ents * R), x->v_id = ncf__floats((size_t)ents * R);
        x->m_emb = ncf__floats((size_t)x->n * R), x->v_emb = ncf__floats((size_t)x->n * R);
    }
    if (!of || !trained || !used || !row || !x->ptr || !x->has_id || !x->id || !x->g_id || !x->g_emb || !x->fflag ||
        !x->flist || !x->elist || (adam && (!x->m_id || !x->v_id || !x->m_emb || !x->v_emb))) {
        rc = ncf__fail(NCF_ERR_NOMEM, "ncf_model_set_features: out of memory for %d entities' features", ents);
        goto done;
    }
    for (e = 0; e < ents; e++) of[e] = -1;
    for (k = 0; k < f->num_entities; k++)
        if ((e = ncf__entity_of(m, d, s, f, k)) >= 0) of[e] = k, total += f->ptr[k + 1] - f->ptr[k];
    x->idx = NCF__NEW(int32_t, total ? total : 1), x->w = NCF__NEW(float, total ? total : 1);
    if (!x->idx || !x->w) {
        rc = ncf__fail(NCF_ERR_NOMEM, "ncf_model_set_features: out of memory for %lld features", (long long)total);
        goto done;
    }
    for (e = 0, x->ptr[0] = 0; e < ents; e++) {
        double sw = 0;
        int64_t a = of[e] < 0 ? 0 : f->ptr[of[e]], b = of[e] < 0 ? 0 : f->ptr[of[e] + 1], q = x->ptr[e];
        for (j = a; j < b; j++) sw += f->weight[j];
        for (j = a; sw > 0 && j < b; j++)
            if (f->weight[j] > 0) {
                x->idx[q] = f->feat[j], x->w[q++] = (float)((double)x->scale * f->weight[j] / sw);
                if (trained[e]) used[f->feat[j]] = 1;
            }
        x->ptr[e + 1] = q;
        x->has_id[e] = !no_id && trained[e];
    }
    for (k = 0; k < x->n; k++) { /* features no trained entity has stay 0: nothing would move them */
        uint64_t key = ncf__hash3(m->cfg.seed ^ NCF__TAG_FEATURES, (uint64_t)s, (uint64_t)k);
        int r;
        for (r = 0; used[k] && r < (m->user_bias ? R : R - 1); r++) { /* (the bias slot is MF's only) */
            uint64_t a = ncf__hash3(key, (uint64_t)r, 0), b = ncf__mix64(a);
            double u1 = ncf__uniform(a) < 1e-300 ? 1e-300 : ncf__uniform(a), u2 = ncf__uniform(b);
            x->emb[(size_t)k * R + r] = (float)(m->cfg.init_sd * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
        }
    }
    for (e = 0; e < ents; e++) { /* id = the model's row less the features' part */
        int r;
        if (!x->has_id[e]) continue;
        ncf_row(m, s, e, x->id + (size_t)e * R);
        x->has_id[e] = 0, ncf__compose_row(x, R, e, row), x->has_id[e] = 1;
        for (r = 0; r < R; r++) x->id[(size_t)e * R + r] -= row[r];
    }
done:
    NCF_FREE(of), NCF_FREE(trained), NCF_FREE(used), NCF_FREE(row);
    return rc;
}

/* The model's own moments of side s's rows cleared: their gradients are passed on now, and a
   moment left over would keep moving them. */
static void ncf__clear_side_moments(ncf_model *m, int s)
{
    const struct ncf__scratch *sc = m->scratch;
    int t, n = s ? m->cfg.num_items : m->cfg.num_users;
    for (t = 0; m->adam_m && t < sc->tables.n; t++) {
        const float *tab = s ? sc->tables.tab[t].item : sc->tables.tab[t].user;
        size_t o = (size_t)(tab - m->params), c = (size_t)n * sc->tables.tab[t].D;
        memset(m->adam_m + o, 0, sizeof(float) * c), memset(m->adam_v + o, 0, sizeof(float) * c);
    }
}

NCFDEF int ncf_model_set_features(ncf_model *m, int side, const ncf_features *f, const ncf_dataset *d, int flags,
                                  float scale)
{
    struct ncf__features *F;
    ncf__fside x;
    float *row;
    int rc, R, e;
    if (!m || (side != 0 && side != 1) || !d || !d->user_ptr)
        return ncf__fail(NCF_ERR_ARG, "ncf_model_set_features: need a model, side 0 (users) or 1 (items) and data");
    if ((rc = ncf__writable(m, "ncf_model_set_features")) != NCF_OK) return rc;
    if ((rc = ncf__features_valid(f, "ncf_model_set_features")) != NCF_OK) return rc;
    if (flags & ~NCF_FEATURES_NO_ID)
        return ncf__fail(NCF_ERR_ARG, "ncf_model_set_features: unknown flags 0x%x", (unsigned)flags);
    if (!(scale >= NCF__MIN_FEATURE_SCALE && scale <= NCF__MAX_FEATURE_SCALE))
        return ncf__fail(NCF_ERR_ARG, "ncf_model_set_features: scale %g: need %g to %g", (double)scale,
                         NCF__MIN_FEATURE_SCALE, NCF__MAX_FEATURE_SCALE);
    if (m->cfg.optimizer == NCF_OPT_ALS)
        return ncf__fail(NCF_ERR_ARG,
                         "ncf_model_set_features: ALS solves rows in closed form and takes no features "
                         "(train features with Adam or SGD)");
    if (ncf__is_shard(d) || d->num_users != m->cfg.num_users || d->num_items != m->cfg.num_items)
        return ncf__fail(NCF_ERR_ARG, "ncf_model_set_features: the data has %d users and %d items, the model %d and %d",
                         d->num_users, d->num_items, m->cfg.num_users, m->cfg.num_items);
    if (!m->scratch->feat && !(m->scratch->feat = NCF__ZNEW(struct ncf__features, 1)))
        return ncf__fail(NCF_ERR_NOMEM, "ncf_model_set_features: out of memory");
    F = m->scratch->feat, R = ncf_row_size(m);
    if ((rc = ncf__fside_alloc(&x, f->num_features, f->num_features ? f->vocab_at[f->num_features] : 0, R)) != NCF_OK)
        return rc;
    if (f->num_features) memcpy(x.text, f->vocab, (size_t)f->vocab_at[f->num_features]);
    memcpy(x.at, f->vocab_at, sizeof(int64_t) * ((size_t)f->num_features + 1));
    x.scale = scale;
    if (!(row = NCF__NEW(float, R))) rc = ncf__fail(NCF_ERR_NOMEM, "ncf_model_set_features: out of memory");
    if (rc == NCF_OK) rc = ncf__fside_train(m, side, &x, f, d, flags & NCF_FEATURES_NO_ID);
    if (rc != NCF_OK) {
        ncf__fside_free(&x), NCF_FREE(row);
        return rc;
    }
    ncf__fside_free(&F->side[side]);
    F->side[side] = x;
    ncf__clear_side_moments(m, side);
    for (e = 0; e < x.ents; e++) ncf__compose_row(&F->side[side], R, e, row), ncf__put_side_row(m, side, e, row);
    NCF_FREE(row);
    ncf_model_params_changed(m);
    return NCF_OK;
}

/* The row of features (idx, weights w, n of them; unknown ones -1) from the vocabulary alone,
   each weight as training's (ncf__fside_train): the same bits as a trained entity's part. */
static void ncf__feature_mean(const ncf__fside *f, int R, const int32_t *idx, const float *w, int n, float *row)
{
    double sw = 0;
    int j;
    memset(row, 0, sizeof(float) * (size_t)R);
    for (j = 0; j < n; j++) sw += idx[j] >= 0 && w[j] > 0 ? w[j] : 0;
    for (j = 0; sw > 0 && j < n; j++)
        if (idx[j] >= 0 && w[j] > 0)
            ncf__add_scaled(row, f->emb + (size_t)idx[j] * R, (float)((double)f->scale * w[j] / sw), R);
}

static int ncf__find_token(const ncf__fside *f, const char *s, size_t len)
{
    ncf__ids t;
    memset(&t, 0, sizeof t);
    t.n = f->n, t.text = f->text, t.at = f->at;
    return ncf__find_text(&t, s, len);
}

NCFDEF int ncf_feature_row(const ncf_model *m, int side, const char *const *tokens, const float *weights, int n,
                           float *row)
{
    const ncf__fside *f = m && (side == 0 || side == 1) ? ncf__fside_of(m, side) : NULL;
    int32_t *idx;
    float *w;
    int j, unknown = 0;
    if (!m || (side != 0 && side != 1) || n < 0 || (n && !tokens) || !row)
        return ncf__fail(NCF_ERR_ARG, "ncf_feature_row: need a model, side 0 or 1, n >= 0 tokens and a row");
    if (!f) return ncf__fail(NCF_ERR_ARG, "ncf_feature_row: the model has no %s features", side ? "item" : "user");
    idx = NCF__NEW(int32_t, n ? n : 1), w = NCF__NEW(float, n ? n : 1);
    if (!idx || !w) {
        NCF_FREE(idx), NCF_FREE(w);
        return ncf__fail(NCF_ERR_NOMEM, "ncf_feature_row: out of memory");
    }
    for (j = 0; j < n; j++) {
        w[j] = weights ? weights[j] : 1.0f;
        idx[j] = tokens[j] ? ncf__find_token(f, tokens[j], strlen(tokens[j])) : -1;
        unknown += idx[j] < 0;
        if (!(w[j] >= 0 && w[j] <= 1e30f)) {
            double bad = (double)w[j];
            NCF_FREE(idx), NCF_FREE(w);
            return ncf__fail(NCF_ERR_ARG, "ncf_feature_row: weights[%d] = %g: need 0 to 1e30", j, bad);
        }
    }
    ncf__feature_mean(f, ncf_row_size(m), idx, w, n, row);
    NCF_FREE(idx), NCF_FREE(w);
    return unknown;
}

NCFDEF int ncf_model_add_features(ncf_model **mp, int side, const ncf_features *f, int *added)
{
    const ncf__fside *x;
    char **ids = NULL, *text = NULL;
    float *rows = NULL;
    int32_t *idx = NULL;
    int k, c = 0, R, rc;
    int64_t j;
    if (added) *added = 0;
    if (!mp || !*mp || (side != 0 && side != 1))
        return ncf__fail(NCF_ERR_ARG, "ncf_model_add_features: need a model and side 0 (users) or 1 (items)");
    if ((rc = ncf__features_valid(f, "ncf_model_add_features")) != NCF_OK) return rc;
    if (!(x = ncf__fside_of(*mp, side)))
        return ncf__fail(NCF_ERR_ARG, "ncf_model_add_features: the model has no %s features", side ? "item" : "user");
    if (!ncf__has_ids(*mp)) return ncf__fail(NCF_ERR_ARG, "ncf_model_add_features: the model holds no ids");
    R = ncf_row_size(*mp);
    ids = NCF__NEW(char *, f->num_entities ? f->num_entities : 1);
    text = NCF__NEW(char, f->ids_at[f->num_entities] + f->num_entities + 1);
    rows = NCF__NEW(float, (size_t)(f->num_entities ? f->num_entities : 1) * R);
    idx = NCF__NEW(int32_t, f->ptr[f->num_entities] ? f->ptr[f->num_entities] : 1);
    if (!ids || !text || !rows || !idx) {
        rc = ncf__fail(NCF_ERR_NOMEM, "ncf_model_add_features: out of memory for %d entities", f->num_entities);
        goto done;
    }
    for (j = 0; j < f->ptr[f->num_entities]; j++) /* f's features in the model's vocabulary */
        idx[j] = ncf__find_token(x, f->vocab + f->vocab_at[f->feat[j]],
                                 (size_t)(f->vocab_at[f->feat[j] + 1] - f->vocab_at[f->feat[j]]));
    for (k = 0, j = 0; k < f->num_entities; k++) {
        ncf__ids t = ncf__model_ids(*mp, side);
        size_t len = (size_t)(f->ids_at[k + 1] - f->ids_at[k]);
        if (ncf__ids_find(&t, f->ids + f->ids_at[k], len) >= 0) continue; /* known: trained, or added before */
        ids[c] = text + j, memcpy(ids[c], f->ids + f->ids_at[k], len), ids[c][len] = 0, j += (int64_t)len + 1;
        ncf__feature_mean(x, R, idx + f->ptr[k], f->weight + f->ptr[k], (int)(f->ptr[k + 1] - f->ptr[k]),
                          rows + (size_t)c * R);
        c++;
    }
    rc = c ? ncf_model_add(mp, side, (const char *const *)ids, rows, c) : NCF_OK;
    if (rc == NCF_OK && added) *added = c;
done:
    NCF_FREE(ids), NCF_FREE(text), NCF_FREE(rows), NCF_FREE(idx);
    return rc;
}

NCFDEF int ncf_feature_popularity(const ncf_features *f, const ncf_dataset *d, float *scores)
{
    double *sum = NULL, *cnt = NULL, mean = 0;
    float *pop = NULL;
    int32_t *of = NULL;
    int i, k, trained = 0, rc;
    int64_t j;
    if (!d || !d->user_ptr || !scores) return ncf__fail(NCF_ERR_ARG, "ncf_feature_popularity: need data and scores");
    if ((rc = ncf__features_valid(f, "ncf_feature_popularity")) != NCF_OK) return rc;
    sum = NCF__ZNEW(double, f->num_features ? f->num_features : 1),
    cnt = NCF__ZNEW(double, f->num_features ? f->num_features : 1);
    pop = NCF__ZNEW(float, d->num_items ? d->num_items : 1), of = NCF__NEW(int32_t, d->num_items ? d->num_items : 1);
    if (!sum || !cnt || !pop || !of) {
        rc = ncf__fail(NCF_ERR_NOMEM, "ncf_feature_popularity: out of memory");
        goto done;
    }
    for (j = 0; j < d->num_train; j++) pop[d->items[j]] += 1.0f;
    for (i = 0; i < d->num_items; i++) of[i] = -1, mean += pop[i], trained += pop[i] > 0;
    mean = trained ? mean / trained : 0;
    for (k = 0; k < f->num_entities; k++) {
        ncf__ids t = ncf__dataset_ids(d, 1);
        int it = ncf__ids_find(&t, f->ids + f->ids_at[k], (size_t)(f->ids_at[k + 1] - f->ids_at[k]));
        if (it < 0) continue;
        of[it] = k;
        for (j = f->ptr[k]; pop[it] > 0 && j < f->ptr[k + 1]; j++)
            sum[f->feat[j]] += f->weight[j] * pop[it], cnt[f->feat[j]] += f->weight[j];
    }
    for (i = 0; i < d->num_items; i++) {
        double s = 0, w = 0;
        for (j = of[i] < 0 ? 0 : f->ptr[of[i]]; of[i] >= 0 && j < f->ptr[of[i] + 1]; j++)
            if (cnt[f->feat[j]] > 0) s += f->weight[j] * sum[f->feat[j]] / cnt[f->feat[j]], w += f->weight[j];
        scores[i] = pop[i] > 0 ? pop[i] : (float)(w > 0 ? s / w : mean);
    }
done:
    NCF_FREE(sum), NCF_FREE(cnt), NCF_FREE(pop), NCF_FREE(of);
    return rc;
}

/* A grown model (ncf_model_grow, ncf_model_add) keeps the vocabulary and embeddings of src:
   it serves new entities from them; training them again needs ncf_model_set_features. */
static int ncf__features_carry(ncf_model *dst, const ncf_model *src)
{
    int s, R = ncf_row_size(src), rc;
    if (!ncf__has_features(src)) return NCF_OK;
    if (!(dst->scratch->feat = NCF__ZNEW(struct ncf__features, 1))) return ncf__fail(NCF_ERR_NOMEM, "out of memory");
    for (s = 0; s < 2; s++) {
        const ncf__fside *a = ncf__fside_of(src, s);
        ncf__fside *b = &dst->scratch->feat->side[s];
        if (!a) continue;
        if ((rc = ncf__fside_alloc(b, a->n, a->at[a->n], R)) != NCF_OK) return rc;
        memcpy(b->text, a->text, (size_t)a->at[a->n]), memcpy(b->at, a->at, sizeof(int64_t) * ((size_t)a->n + 1));
        memcpy(b->emb, a->emb, sizeof(float) * (size_t)a->n * R);
        b->no_id = a->no_id, b->scale = a->scale;
    }
    return NCF_OK;
}

/* An average of models (ncf_model_average) serves new entities as its parts would, averaged:
   each feature's embedding is theirs side by side, times row_scale (the rows') and their own
   scales, and MF's bias slot their mean. All have model 0's vocabulary or none. */
static int ncf__features_average(ncf_model *m, ncf_model *const *models, int n, float row_scale)
{
    int s, k, j, d, R = ncf_row_size(m), rc;
    for (s = 0; s < 2; s++) {
        const ncf__fside *a = ncf__fside_of(models[0], s);
        ncf__fside *b;
        for (k = 1; k < n; k++) {
            const ncf__fside *x = ncf__fside_of(models[k], s);
            if (!a != !x ||
                (a &&
                 (x->n != a->n || x->at[x->n] != a->at[a->n] || memcmp(x->text, a->text, (size_t)a->at[a->n]) != 0)))
                return ncf__fail(NCF_ERR_ARG, "ncf_model_average: model %d's %s features are not model 0's", k,
                                 s ? "item" : "user");
        }
        if (!a) continue;
        if (!m->scratch->feat && !(m->scratch->feat = NCF__ZNEW(struct ncf__features, 1)))
            return ncf__fail(NCF_ERR_NOMEM, "out of memory");
        b = &m->scratch->feat->side[s];
        if ((rc = ncf__fside_alloc(b, a->n, a->at[a->n], R)) != NCF_OK) return rc;
        memcpy(b->text, a->text, (size_t)a->at[a->n]), memcpy(b->at, a->at, sizeof(int64_t) * ((size_t)a->n + 1));
        b->no_id = a->no_id, b->scale = 1.0f;
        for (j = 0; j < a->n; j++) {
            float *dst = b->emb + (size_t)j * R;
            for (k = 0; k < n; k++) {
                const ncf__fside *x = ncf__fside_of(models[k], s);
                int F = models[k]->cfg.mf_dim, Rk = ncf_row_size(models[k]);
                const float *src = x->emb + (size_t)j * Rk;
                for (d = 0; d < F; d++) *dst++ = src[d] * x->scale * row_scale;
                if (m->user_bias) b->emb[(size_t)j * R + R - 1] += src[Rk - 1] * x->scale / (float)n;
            }
        }
    }
    return NCF_OK;
}

/* What ncf_fit keeps of the best epoch besides the model's parameters: every side's feature
   and id embeddings and their moments, n floats in blocks (NULL: none). */
static size_t ncf__features_state(const ncf_model *m, float **blocks, size_t *sizes)
{
    size_t total = 0;
    int s, k, R = ncf_row_size(m);
    for (s = 0; s < 2; s++) {
        ncf__fside *f = ncf__fside_of(m, s);
        float *b[5];
        size_t n[5];
        b[0] = f ? f->emb : NULL, n[0] = f ? (size_t)f->n * R : 0;
        b[1] = f ? f->id : NULL, n[1] = f && f->id ? (size_t)f->ents * R : 0;
        b[2] = f ? f->m_emb : NULL, b[3] = f ? f->v_emb : NULL, n[2] = n[3] = f && f->m_emb ? n[0] : 0;
        b[4] = f ? f->m_id : NULL, n[4] = f && f->m_id ? n[1] : 0;
        for (k = 0; k < 5; k++) blocks[s * 6 + k] = b[k], sizes[s * 6 + k] = n[k], total += n[k];
        blocks[s * 6 + 5] = f ? f->v_id : NULL, sizes[s * 6 + 5] = n[4], total += n[4];
    }
    return total;
}

/* ---- >>features-save: the model file's features section ---------------------------------------- */
/* After the moments, in a version 5 file with the features flag: its bytes after this count (a
   u64), then for users and items: the vocabulary's size n and whether the side is features-only
   (u32 each), its text's bytes (u64), the features' scale (f32) and 4 zero bytes, and when n > 0 the n + 1 offsets (u64), the text, the
   n x ncf_row_size embeddings (f32), each part 8-aligned. */

static uint64_t ncf__pad8(uint64_t x) { return (x + 7) / 8 * 8; }

static uint64_t ncf__features_bytes(const ncf_model *m)
{
    uint64_t b = 8;
    int s, R = ncf_row_size(m);
    if (!ncf__has_features(m)) return 0;
    for (s = 0; s < 2; s++) {
        const ncf__fside *f = ncf__fside_of(m, s);
        b += 24;
        if (f && f->n)
            b += 8 * ((uint64_t)f->n + 1) + ncf__pad8((uint64_t)f->at[f->n]) + ncf__pad8(4 * (uint64_t)f->n * R);
    }
    return b;
}

/* The section into p (ncf__features_bytes of it, zeroed: the padding stays 0). */
static void ncf__features_write(const ncf_model *m, uint8_t *p)
{
    ncf__writer w;
    uint64_t k;
    int s, R = ncf_row_size(m);
    w.p = p, w.at = 0;
    ncf__put_u64(&w, ncf__features_bytes(m) - 8);
    for (s = 0; s < 2; s++) {
        const ncf__fside *f = ncf__fside_of(m, s);
        int n = f ? f->n : 0;
        ncf__put_u32(&w, (uint32_t)n), ncf__put_u32(&w, f ? (uint32_t)f->no_id : 0);
        ncf__put_u64(&w, n ? (uint64_t)f->at[n] : 0), ncf__put_f32(&w, n ? f->scale : 0.0f), w.at += 4;
        if (!n) continue;
        for (k = 0; k <= (uint64_t)n; k++) ncf__put_u64(&w, (uint64_t)f->at[k]);
        memcpy(p + w.at, f->text, (size_t)f->at[n]), w.at += (size_t)ncf__pad8((uint64_t)f->at[n]);
        for (k = 0; k < (uint64_t)n * R; k++) ncf__put_f32(&w, f->emb[k]);
        w.at = (size_t)ncf__pad8(w.at);
    }
}

/* The section at p (bytes long, its count included) read into m, every size and token checked:
   the vocabulary strictly ascending, tokens of 1 to NCF_MAX_ID_BYTES, embeddings finite. */
static int ncf__features_read(ncf_model *m, const uint8_t *p, uint64_t bytes)
{
    ncf__reader r;
    uint64_t k;
    int s, R = ncf_row_size(m), rc;
    r.p = p, r.at = 8, r.n = (size_t)bytes;
    if (!(m->scratch->feat = NCF__ZNEW(struct ncf__features, 1))) return ncf__fail(NCF_ERR_NOMEM, "out of memory");
    for (s = 0; s < 2; s++) {
        uint64_t text;
        uint32_t n, no_id, pad;
        float scale;
        ncf__fside *f = &m->scratch->feat->side[s];
        if (!ncf__get_u32(&r, &n) || !ncf__get_u32(&r, &no_id) || !ncf__get_u64(&r, &text) ||
            !ncf__get_f32(&r, &scale) || !ncf__get_u32(&r, &pad))
            return ncf__fail(NCF_ERR_PARSE, "model features section is truncated");
        if (no_id > 1 || n > bytes / 8 || text > bytes || pad ||
            (n && r.at + 8 * ((uint64_t)n + 1) + ncf__pad8(text) + ncf__pad8(4 * (uint64_t)n * R) > bytes) ||
            (!n && text) || (n && !(scale >= NCF__MIN_FEATURE_SCALE && scale <= NCF__MAX_FEATURE_SCALE)))
            return ncf__fail(NCF_ERR_PARSE, "model features section has out-of-range sizes or scale");
        if (!n) continue;
        if ((rc = ncf__fside_alloc(f, (int)n, (int64_t)text, R)) != NCF_OK) return rc;
        f->no_id = (int)no_id, f->scale = scale;
        for (k = 0; k <= n; k++) {
            uint64_t o;
            ncf__get_u64(&r, &o); /* (in the bounds checked above) */
            f->at[k] = (int64_t)o;
            if ((k == 0 && o) ||
                (k && (o <= (uint64_t)f->at[k - 1] || o - (uint64_t)f->at[k - 1] > NCF_MAX_ID_BYTES)) || o > text ||
                (k == n && o != text))
                return ncf__fail(NCF_ERR_PARSE, "model features section: token %d's offset is out of order", (int)k);
        }
        memcpy(f->text, p + r.at, (size_t)text), r.at += (size_t)ncf__pad8(text);
        for (k = 1; k < n; k++)
            if (ncf__cmp_text(f->text + f->at[k - 1], (size_t)(f->at[k] - f->at[k - 1]), f->text + f->at[k],
                              (size_t)(f->at[k + 1] - f->at[k])) >= 0)
                return ncf__fail(NCF_ERR_PARSE, "model features section: the tokens do not ascend at %d", (int)k);
        for (k = 0; k < (uint64_t)n * R; k++) {
            ncf__get_f32(&r, &f->emb[k]);
            if (!(f->emb[k] >= -NCF__MAX_PARAM && f->emb[k] <= NCF__MAX_PARAM))
                return ncf__fail(NCF_ERR_PARSE, "model features section: an embedding is not finite or is implausible");
        }
        r.at = (size_t)ncf__pad8(r.at);
    }
    if (r.at != bytes)
        return ncf__fail(NCF_ERR_PARSE, "model features section is %llu bytes, its sizes say %llu",
                         (unsigned long long)bytes, (unsigned long long)r.at);
    return NCF_OK;
}

#endif /* NCF_INFERENCE_ONLY */

/* ---- >>file (src/file.c) --------------------------------------------------------------------- */
/* ---- >>model-file: layout, CRC, writing, reading, reading in place --------------------------- */
/* A file's flags; the text ids came with version 4. */
enum {
    NCF__FILE_ADAM = 1,
    NCF__FILE_IDS = 2,
    NCF__FILE_RATED = 4,
    NCF__FILE_INT8 = 8,
    NCF__FILE_USER_TEXT = 16,
    NCF__FILE_ITEM_TEXT = 32,
    NCF__FILE_FEATURES = 64 /* version 5 on */
};
#define NCF__FILE_SLOTS 16                               /* layer slots in the header */
#define NCF__HEADER_BYTES (4 + 4 * NCF__W_UNOBSERVED)    /* the magic and the words before version 3's */
#define NCF__HEADER_V3 ((NCF__HEADER_BYTES + 7) / 8 * 8) /* version 3's sections start 8-aligned */

/* The header after its magic: 4-byte little-endian words, a 64-bit value two of them (low first). */
enum {
    NCF__W_VERSION,
    NCF__W_MARK,
    NCF__W_FLAGS,
    NCF__W_USERS,
    NCF__W_ITEMS,
    NCF__W_MODEL,
    NCF__W_MF_DIM,
    NCF__W_LAYERS,
    NCF__W_SLOTS,
    NCF__W_MF_REG = NCF__W_SLOTS + NCF__FILE_SLOTS,
    NCF__W_REGS,
    NCF__W_LR = NCF__W_REGS + NCF__FILE_SLOTS, /* then beta1, beta2, epsilon */
    NCF__W_ADAM = NCF__W_LR + 4,
    NCF__W_BATCH,
    NCF__W_NEG,
    NCF__W_OPTIMIZER,
    NCF__W_INIT_SD,
    NCF__W_SEED,
    NCF__W_STEP = NCF__W_SEED + 2,
    NCF__W_EPOCH = NCF__W_STEP + 2,
    NCF__W_PARAMS = NCF__W_EPOCH + 2,
    NCF__W_UNOBSERVED = NCF__W_PARAMS + 2, /* version 3 on: padding (0) before 0.7 */
    NCF__WORDS
};

static float ncf__word_f32(uint32_t v)
{
    float f;
    memcpy(&f, &v, 4);
    return f;
}

static uint64_t ncf__word_u64(const uint32_t *w) { return (uint64_t)w[1] << 32 | w[0]; }

/* Where a file's sections are, in bytes from its start. The rated-items section starts with
   its size: version 2, the number of items (then a count per user and the items); version 3,
   the bytes of the varint stream (then where each user's starts, and the stream). */
typedef struct {
    uint32_t version, flags;
    uint64_t ids, rated, params, adam, end; /* end: where the CRC is */
    uint64_t feat, feat_bytes;              /* the features section (its count included) */
    uint64_t id_at[2];                      /* the user and item id tables */
    uint64_t text_bytes[2];                 /* their text's bytes, when text */
    uint64_t tensor[NCF_MAX_TENSORS];       /* each tensor's floats, or its int8 rows' scales */
    uint64_t nrated;
} ncf__layout;

static uint64_t ncf__pad(uint64_t at, uint64_t a) { return NCF__CEIL_DIV(at, a) * a; }

/* Where a file's sections start: version 3 on pads the header to 8 bytes. */
static uint64_t ncf__header_bytes(uint32_t version) { return version >= 3 ? NCF__HEADER_V3 : NCF__HEADER_BYTES; }

/* Tensors an int8 file stores as int8 rows: the GMF and MLP tables (MF's biases stay float). */
static int ncf__quantized(const ncf_model *m, int t)
{
    return !strncmp(m->tensors[t].name, "gmf_", 4) || !strncmp(m->tensors[t].name, "mlp_", 4);
}

/* The id tables from at: each n int64 ids, or n + 1 int64 offsets and the text, 8-aligned. */
static uint64_t ncf__lay_out_ids(ncf__layout *L, uint64_t at, uint64_t U, uint64_t I)
{
    int t;
    for (t = 0; t < 2; t++) {
        uint64_t n = t ? I : U;
        L->id_at[t] = at;
        if (!(L->flags & NCF__FILE_IDS)) continue;
        at += L->flags & (t ? NCF__FILE_ITEM_TEXT : NCF__FILE_USER_TEXT) ? 8 * (n + 1) + ncf__pad(L->text_bytes[t], 8)
                                                                         : 8 * n;
    }
    return at;
}

static void ncf__lay_out(const ncf_model *m, ncf__layout *L)
{
    uint64_t at, U = (uint64_t)m->cfg.num_users, I = (uint64_t)m->cfg.num_items;
    int t, v3 = L->version >= 3;
    at = ncf__header_bytes(L->version);
    L->ids = at;
    at = ncf__lay_out_ids(L, at, U, I);
    L->rated = at;
    if (L->flags & NCF__FILE_RATED)
        at = v3 ? ncf__pad(at + 8 + 8 * (U + 1) + L->nrated, 8) : at + 8 + 4 * (U + L->nrated);
    L->params = at;
    for (t = 0; t < m->num_tensors; t++) {
        uint64_t rows = (uint64_t)m->tensors[t].rows, n = rows * (uint64_t)m->tensors[t].cols;
        L->tensor[t] = at;
        at = (L->flags & NCF__FILE_INT8) && ncf__quantized(m, t) ? ncf__pad(at + 4 * rows + n, 4) : at + 4 * n;
    }
    L->adam = at;
    if (L->flags & NCF__FILE_ADAM) at += 8 * (uint64_t)m->num_params;
    L->feat = at;
    if (L->flags & NCF__FILE_FEATURES) at += L->feat_bytes;
    L->end = at;
}

/* The CRC-32 of zlib and PNG (reflected polynomial 0xEDB88320). */
static const uint32_t ncf__crc_table[256] = {
    0x00000000u, 0x77073096u, 0xEE0E612Cu, 0x990951BAu, 0x076DC419u, 0x706AF48Fu, 0xE963A535u, 0x9E6495A3u, 0x0EDB8832u,
    0x79DCB8A4u, 0xE0D5E91Eu, 0x97D2D988u, 0x09B64C2Bu, 0x7EB17CBDu, 0xE7B82D07u, 0x90BF1D91u, 0x1DB71064u, 0x6AB020F2u,
    0xF3B97148u, 0x84BE41DEu, 0x1ADAD47Du, 0x6DDDE4EBu, 0xF4D4B551u, 0x83D385C7u, 0x136C9856u, 0x646BA8C0u, 0xFD62F97Au,
    0x8A65C9ECu, 0x14015C4Fu, 0x63066CD9u, 0xFA0F3D63u, 0x8D080DF5u, 0x3B6E20C8u, 0x4C69105Eu, 0xD56041E4u, 0xA2677172u,
    0x3C03E4D1u, 0x4B04D447u, 0xD20D85FDu, 0xA50AB56Bu, 0x35B5A8FAu, 0x42B2986Cu, 0xDBBBC9D6u, 0xACBCF940u, 0x32D86CE3u,
    0x45DF5C75u, 0xDCD60DCFu, 0xABD13D59u, 0x26D930ACu, 0x51DE003Au, 0xC8D75180u, 0xBFD06116u, 0x21B4F4B5u, 0x56B3C423u,
    0xCFBA9599u, 0xB8BDA50Fu, 0x2802B89Eu, 0x5F058808u, 0xC60CD9B2u, 0xB10BE924u, 0x2F6F7C87u, 0x58684C11u, 0xC1611DABu,
    0xB6662D3Du, 0x76DC4190u, 0x01DB7106u, 0x98D220BCu, 0xEFD5102Au, 0x71B18589u, 0x06B6B51Fu, 0x9FBFE4A5u, 0xE8B8D433u,
    0x7807C9A2u, 0x0F00F934u, 0x9609A88Eu, 0xE10E9818u, 0x7F6A0DBBu, 0x086D3D2Du, 0x91646C97u, 0xE6635C01u, 0x6B6B51F4u,
    0x1C6C6162u, 0x856530D8u, 0xF262004Eu, 0x6C0695EDu, 0x1B01A57Bu, 0x8208F4C1u, 0xF50FC457u, 0x65B0D9C6u, 0x12B7E950u,
    0x8BBEB8EAu, 0xFCB9887Cu, 0x62DD1DDFu, 0x15DA2D49u, 0x8CD37CF3u, 0xFBD44C65u, 0x4DB26158u, 0x3AB551CEu, 0xA3BC0074u,
    0xD4BB30E2u, 0x4ADFA541u, 0x3DD895D7u, 0xA4D1C46Du, 0xD3D6F4FBu, 0x4369E96Au, 0x346ED9FCu, 0xAD678846u, 0xDA60B8D0u,
    0x44042D73u, 0x33031DE5u, 0xAA0A4C5Fu, 0xDD0D7CC9u, 0x5005713Cu, 0x270241AAu, 0xBE0B1010u, 0xC90C2086u, 0x5768B525u,
    0x206F85B3u, 0xB966D409u, 0xCE61E49Fu, 0x5EDEF90Eu, 0x29D9C998u, 0xB0D09822u, 0xC7D7A8B4u, 0x59B33D17u, 0x2EB40D81u,
    0xB7BD5C3Bu, 0xC0BA6CADu, 0xEDB88320u, 0x9ABFB3B6u, 0x03B6E20Cu, 0x74B1D29Au, 0xEAD54739u, 0x9DD277AFu, 0x04DB2615u,
    0x73DC1683u, 0xE3630B12u, 0x94643B84u, 0x0D6D6A3Eu, 0x7A6A5AA8u, 0xE40ECF0Bu, 0x9309FF9Du, 0x0A00AE27u, 0x7D079EB1u,
    0xF00F9344u, 0x8708A3D2u, 0x1E01F268u, 0x6906C2FEu, 0xF762575Du, 0x806567CBu, 0x196C3671u, 0x6E6B06E7u, 0xFED41B76u,
    0x89D32BE0u, 0x10DA7A5Au, 0x67DD4ACCu, 0xF9B9DF6Fu, 0x8EBEEFF9u, 0x17B7BE43u, 0x60B08ED5u, 0xD6D6A3E8u, 0xA1D1937Eu,
    0x38D8C2C4u, 0x4FDFF252u, 0xD1BB67F1u, 0xA6BC5767u, 0x3FB506DDu, 0x48B2364Bu, 0xD80D2BDAu, 0xAF0A1B4Cu, 0x36034AF6u,
    0x41047A60u, 0xDF60EFC3u, 0xA867DF55u, 0x316E8EEFu, 0x4669BE79u, 0xCB61B38Cu, 0xBC66831Au, 0x256FD2A0u, 0x5268E236u,
    0xCC0C7795u, 0xBB0B4703u, 0x220216B9u, 0x5505262Fu, 0xC5BA3BBEu, 0xB2BD0B28u, 0x2BB45A92u, 0x5CB36A04u, 0xC2D7FFA7u,
    0xB5D0CF31u, 0x2CD99E8Bu, 0x5BDEAE1Du, 0x9B64C2B0u, 0xEC63F226u, 0x756AA39Cu, 0x026D930Au, 0x9C0906A9u, 0xEB0E363Fu,
    0x72076785u, 0x05005713u, 0x95BF4A82u, 0xE2B87A14u, 0x7BB12BAEu, 0x0CB61B38u, 0x92D28E9Bu, 0xE5D5BE0Du, 0x7CDCEFB7u,
    0x0BDBDF21u, 0x86D3D2D4u, 0xF1D4E242u, 0x68DDB3F8u, 0x1FDA836Eu, 0x81BE16CDu, 0xF6B9265Bu, 0x6FB077E1u, 0x18B74777u,
    0x88085AE6u, 0xFF0F6A70u, 0x66063BCAu, 0x11010B5Cu, 0x8F659EFFu, 0xF862AE69u, 0x616BFFD3u, 0x166CCF45u, 0xA00AE278u,
    0xD70DD2EEu, 0x4E048354u, 0x3903B3C2u, 0xA7672661u, 0xD06016F7u, 0x4969474Du, 0x3E6E77DBu, 0xAED16A4Au, 0xD9D65ADCu,
    0x40DF0B66u, 0x37D83BF0u, 0xA9BCAE53u, 0xDEBB9EC5u, 0x47B2CF7Fu, 0x30B5FFE9u, 0xBDBDF21Cu, 0xCABAC28Au, 0x53B39330u,
    0x24B4A3A6u, 0xBAD03605u, 0xCDD70693u, 0x54DE5729u, 0x23D967BFu, 0xB3667A2Eu, 0xC4614AB8u, 0x5D681B02u, 0x2A6F2B94u,
    0xB40BBE37u, 0xC30C8EA1u, 0x5A05DF1Bu, 0x2D02EF8Du};

static uint32_t ncf__crc32(const uint8_t *p, size_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    size_t i;
    for (i = 0; i < n; i++) c = ncf__crc_table[(c ^ p[i]) & 255] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

/* Row r of tensor t as floats: the model's, or its int8 row dequantized into tmp. */
static const float *ncf__tensor_row(const ncf_model *m, int t, int r, float *tmp)
{
    const struct ncf__scratch *s = m->scratch;
    int cols = m->tensors[t].cols;
    if (s->tables.floats[t]) return s->tables.floats[t] + (size_t)r * cols;
    ncf__dequantize(s->tables.int8[t] + (size_t)r * cols, s->tables.scales[t][r], cols, tmp);
    return tmp;
}

/* Symmetric per-row int8: scale = max |x| / 127, q = x / scale rounded half away from 0. */
static float ncf__row_scale(const float *x, int n)
{
    float a = 0.0f;
    int c;
    for (c = 0; c < n; c++) a = x[c] > a ? x[c] : -x[c] > a ? -x[c] : a;
    return a / 127.0f;
}

static int8_t ncf__quantize(float x, float scale)
{
    float v = scale > 0.0f ? x / scale : 0.0f;
    v = v > 127.0f ? 127.0f : v < -127.0f ? -127.0f : v;
    return (int8_t)(v >= 0.0f ? v + 0.5f : v - 0.5f);
}

/* Tensor t into the file: floats, or int8 rows (scales, then the rows). An int8 model read in
   place writes its own rows and scales unchanged. */
static void ncf__put_tensor(ncf__writer *w, const ncf_model *m, int t, int int8, float *tmp)
{
    const float *x = m->scratch->tables.floats[t];
    size_t r, c, rows = (size_t)m->tensors[t].rows, cols = (size_t)m->tensors[t].cols;
    if (!int8) {
        for (r = 0; r < rows; r++) {
            const float *row = ncf__tensor_row(m, t, (int)r, tmp);
            for (c = 0; c < cols; c++) ncf__put_f32(w, row[c]);
        }
        return;
    }
    if (!x) { /* already int8 */
        for (r = 0; r < rows; r++) ncf__put_f32(w, m->scratch->tables.scales[t][r]);
        memcpy(w->p + w->at, m->scratch->tables.int8[t], rows * cols), w->at += rows * cols;
    } else {
        for (r = 0; r < rows; r++) ncf__put_f32(w, ncf__row_scale(x + r * cols, (int)cols));
        for (r = 0; r < rows; r++) {
            float sc = ncf__row_scale(x + r * cols, (int)cols);
            for (c = 0; c < cols; c++) w->p[w->at++] = (uint8_t)ncf__quantize(x[r * cols + c], sc);
        }
    }
    w->at = (size_t)ncf__pad(w->at, 4);
}

static void ncf__put_header(ncf__writer *w, const ncf_model *m, uint32_t flags)
{
    const ncf_config *c = &m->cfg;
    int l;
    memcpy(w->p, "NCF", 4), w->at = 4;
    ncf__put_u32(w, NCF_FORMAT_VERSION);
    ncf__put_u32(w, 0x01020304u);
    ncf__put_u32(w, flags);
    ncf__put_u32(w, (uint32_t)c->num_users), ncf__put_u32(w, (uint32_t)c->num_items);
    ncf__put_u32(w, (uint32_t)c->model), ncf__put_u32(w, (uint32_t)c->mf_dim), ncf__put_u32(w, (uint32_t)c->num_layers);
    for (l = 0; l < NCF__FILE_SLOTS; l++) ncf__put_u32(w, l < NCF_MAX_LAYERS ? (uint32_t)c->layers[l] : 0);
    ncf__put_f32(w, c->mf_reg);
    for (l = 0; l < NCF__FILE_SLOTS; l++) ncf__put_f32(w, l < NCF_MAX_LAYERS ? c->mlp_reg[l] : 0.0f);
    ncf__put_f32(w, c->lr), ncf__put_f32(w, c->beta1), ncf__put_f32(w, c->beta2), ncf__put_f32(w, c->epsilon);
    ncf__put_u32(w, (uint32_t)c->adam), ncf__put_u32(w, (uint32_t)c->batch_size), ncf__put_u32(w, (uint32_t)c->num_neg);
    ncf__put_u32(w, (uint32_t)c->optimizer), ncf__put_f32(w, c->init_sd);
    ncf__put_u64(w, c->seed), ncf__put_u64(w, (uint64_t)m->step), ncf__put_u64(w, (uint64_t)m->epoch);
    ncf__put_u64(w, (uint64_t)m->num_params);
    NCF_ASSERT(w->at == NCF__HEADER_BYTES);
    ncf__put_f32(w, c->unobserved); /* (in what was padding before 0.7: older files hold 0) */
}

/* An id table at `at`: the integers, or the text's offsets then its bytes. */
static void ncf__put_ids(ncf__writer *w, ncf__ids t, uint64_t at)
{
    int k;
    w->at = (size_t)at;
    if (!t.text) {
        for (k = 0; k < t.n; k++) ncf__put_u64(w, (uint64_t)t.num[k]);
        return;
    }
    for (k = 0; k <= t.n; k++) ncf__put_u64(w, (uint64_t)t.at[k]);
    memcpy(w->p + w->at, t.text, (size_t)t.at[t.n]);
}

/* Whether m can be saved with flags: known flags, and every parameter finite. */
static int ncf__savable(const ncf_model *m, int flags, const char *what)
{
    size_t i;
    int t;
    if (flags & ~(NCF_SAVE_ADAM | NCF_SAVE_INT8 | NCF_SAVE_NO_RATED))
        return ncf__fail(NCF_ERR_ARG, "%s: unknown flags 0x%x", what, (unsigned)flags);
    if ((flags & NCF_SAVE_INT8) && (flags & NCF_SAVE_ADAM))
        return ncf__fail(NCF_ERR_ARG, "%s: an int8 file keeps no Adam moments (it only serves)", what);
    for (t = 0; t < m->num_tensors; t++)
        if (m->scratch->tables.floats[t] &&
            (i = ncf__first_nonfinite(m->scratch->tables.floats[t], (size_t)m->tensors[t].rows * m->tensors[t].cols)) <
                (size_t)m->tensors[t].rows * m->tensors[t].cols)
            return ncf__fail(
                NCF_ERR_DATA, "the model's %s[%lu] is not finite: a diverged model is not saved", m->tensors[t].name,
                (unsigned long)(i +
                                (t < m->scratch->tables.n ? (size_t)NCF__USER0(m->scratch) * m->tensors[t].cols : 0)));
    return NCF_OK;
}

/* Whether a save with flags writes m's Adam moments: asked for, and m has them (inference-only
   builds keep none; SGD and ALS models have none to keep). Every writer asks here. */
static int ncf__saves_moments(const ncf_model *m, int flags)
{
    return (flags & NCF_SAVE_ADAM) && m->adam_m && m->cfg.optimizer == NCF_OPT_ADAM;
}

/* Where each part of m's file goes, saved with flags (checked); whether it keeps the moments. */
static int ncf__save_layout(const ncf_model *m, int flags, ncf__layout *L)
{
    int ids = ncf__has_ids(m), adam = ncf__saves_moments(m, flags);
    L->version = NCF_FORMAT_VERSION;
    L->flags = adam ? NCF__FILE_ADAM : 0;
    L->flags |= (ids ? NCF__FILE_IDS : 0) | (flags & NCF_SAVE_INT8 ? NCF__FILE_INT8 : 0);
    L->flags |= (ids && m->user_text ? NCF__FILE_USER_TEXT : 0) | (ids && m->item_text ? NCF__FILE_ITEM_TEXT : 0);
    L->text_bytes[0] = m->user_text ? (uint64_t)m->user_text_at[m->cfg.num_users] : 0;
    L->text_bytes[1] = m->item_text ? (uint64_t)m->item_text_at[m->cfg.num_items] : 0;
    if (ids && m->rated && !(flags & NCF_SAVE_NO_RATED)) L->flags |= NCF__FILE_RATED;
    L->nrated = L->flags & NCF__FILE_RATED ? (uint64_t)m->rated_ptr[m->cfg.num_users] : 0;
#ifndef NCF_INFERENCE_ONLY
    L->feat_bytes = ncf__features_bytes(m);
#else
    L->feat_bytes = 0;
#endif
    if (L->feat_bytes) L->flags |= NCF__FILE_FEATURES;
    ncf__lay_out(m, L);
    return adam;
}

NCFDEF int ncf_save_mem(const ncf_model *m, int flags, void **buf, size_t *len)
{
    ncf__layout L;
    ncf__writer w;
    float *tmp;
    size_t i;
    int t, ids, int8, adam;
    int rc;
    if (!m || !buf || !len) return ncf__fail(NCF_ERR_ARG, "ncf_save_mem: NULL argument");
    if (NCF__MPI_STALE(m)) return ncf__fail(NCF_ERR_ARG, "ncf_save: " NCF__STALE_TEXT);
    if ((rc = ncf__savable(m, flags, "ncf_save_mem")) != NCF_OK) return rc;
    int8 = !!(flags & NCF_SAVE_INT8);
    ids = ncf__has_ids(m);
    adam = ncf__save_layout(m, flags, &L);
    if (L.end + 4 > (size_t)-1) return ncf__fail(NCF_ERR_NOMEM, "a model file this size does not fit in memory here");
    w.p = (uint8_t *)ncf__zalloc((size_t)L.end + 4, 1), w.at = 0;                         /* (the padding stays 0) */
    tmp = NCF__NEW(float, m->scratch->F > m->scratch->H ? m->scratch->F : m->scratch->H); /* an embedding row */
    if (!w.p || !tmp) {
        NCF_FREE(w.p), NCF_FREE(tmp);
        return ncf__fail(NCF_ERR_NOMEM, "out of memory for a %lu-byte model file", (unsigned long)(L.end + 4));
    }
    ncf__put_header(&w, m, L.flags);
    for (t = 0; ids && t < 2; t++) ncf__put_ids(&w, ncf__model_ids(m, t), L.id_at[t]);
    w.at = (size_t)L.rated;
    if (L.flags & NCF__FILE_RATED) {
        ncf__put_u64(&w, L.nrated);
        for (i = 0; i <= (size_t)m->cfg.num_users; i++) ncf__put_u64(&w, (uint64_t)m->rated_ptr[i]);
        memcpy(w.p + w.at, m->rated, (size_t)L.nrated);
    }
    for (t = 0; t < m->num_tensors; t++) {
        w.at = (size_t)L.tensor[t];
        ncf__put_tensor(&w, m, t, int8 && ncf__quantized(m, t), tmp);
    }
    if (adam && m->adam_m && m->adam_v) { /* (adam implies both: said again for the analyzer) */
        for (i = 0; i < m->num_params; i++) ncf__put_f32(&w, m->adam_m[i]);
        for (i = 0; i < m->num_params; i++) ncf__put_f32(&w, m->adam_v[i]);
    }
#ifndef NCF_INFERENCE_ONLY
    if (L.flags & NCF__FILE_FEATURES) ncf__features_write(m, w.p + L.feat), w.at = (size_t)L.end;
#endif
    NCF_ASSERT(w.at == L.end);
    w.at = (size_t)L.end;
    ncf__put_u32(&w, ncf__crc32(w.p, w.at));
    NCF_FREE(tmp);
    *buf = w.p;
    *len = (size_t)L.end + 4;
    return NCF_OK;
}

/* The sizes that lay out a file's body, each read where the ones before it place it: the text
   of the id tables (their last offset), then the rated items' bytes. Whether each is inside
   the file. */
static int ncf__read_sizes(ncf__reader *r, ncf__layout *L, uint64_t U, uint64_t I)
{
    uint64_t at = ncf__header_bytes(L->version);
    int t;
    L->text_bytes[0] = L->text_bytes[1] = 0;
    for (t = 0; t < 2 && (L->flags & NCF__FILE_IDS); t++) {
        uint64_t n = t ? I : U;
        if (L->flags & (t ? NCF__FILE_ITEM_TEXT : NCF__FILE_USER_TEXT)) {
            if (at + 8 * n + 8 > r->n) return 0;
            r->at = (size_t)(at + 8 * n);
            ncf__get_u64(r, &L->text_bytes[t]);
            if (L->text_bytes[t] > r->n) return 0;
            at += 8 * (n + 1) + ncf__pad(L->text_bytes[t], 8);
        } else {
            at += 8 * n;
        }
        if (at > r->n) return 0;
    }
    r->at = (size_t)at;
    return !(L->flags & NCF__FILE_RATED) || (ncf__get_u64(r, &L->nrated) && L->nrated <= ((uint64_t)1 << 40));
}

/* Reads and checks a file's header (magic, version, the CRC unless the caller verified the
   file, config) and lays out its sections: a model shell (no parameter memory) of that
   config, and where everything is. */
static int ncf__open_file(const void *buf, size_t len, int check_crc, ncf_model **shell, ncf__layout *L, uint64_t *step,
                          uint64_t *epoch)
{
    ncf__reader r;
    ncf_config c;
    uint32_t w[NCF__WORDS], crc;
    int l, rc;
    *shell = NULL;
    r.p = (const uint8_t *)buf, r.at = 4, r.n = len;
    if (len < 4 || memcmp(r.p, "NCF", 4) != 0) return ncf__fail(NCF_ERR_PARSE, "not an ncf.h model (bad magic)");
    if (len < NCF__HEADER_V3 + 4) /* (no file is shorter: every model holds parameters) */
        return ncf__fail(NCF_ERR_PARSE, "model truncated in its header (%lu bytes)", (unsigned long)len);
    ncf__get_u32(&r, &L->version);
    if (L->version < 2 || L->version > NCF_FORMAT_VERSION)
        return ncf__fail(NCF_ERR_PARSE, "model format version %u; this library reads versions 2 to %d",
                         (unsigned)L->version, NCF_FORMAT_VERSION);
    r.at = len - 4;
    ncf__get_u32(&r, &crc);
    if (check_crc && crc != ncf__crc32(r.p, len - 4))
        return ncf__fail(NCF_ERR_PARSE, "model checksum mismatch: the file is damaged or truncated");
    r.n = len - 4, r.at = 4;
    for (l = 0; l < NCF__WORDS; l++) ncf__get_u32(&r, &w[l]); /* (in the length checked above) */
    if (w[NCF__W_MARK] != 0x01020304u) return ncf__fail(NCF_ERR_PARSE, "model endianness mark is wrong");
    L->flags = w[NCF__W_FLAGS];
    *step = ncf__word_u64(w + NCF__W_STEP), *epoch = ncf__word_u64(w + NCF__W_EPOCH);
    if (w[NCF__W_USERS] > INT32_MAX || w[NCF__W_ITEMS] > INT32_MAX || w[NCF__W_MF_DIM] > 65536 ||
        w[NCF__W_LAYERS] > NCF_MAX_LAYERS ||
        (L->flags &
         ~(L->version >= 5       ? 127u
               : L->version >= 4 ? 63u
                                 : 15u)) ||
        ((L->flags & (NCF__FILE_USER_TEXT | NCF__FILE_ITEM_TEXT)) && !(L->flags & NCF__FILE_IDS)) ||
        ((L->flags & NCF__FILE_RATED) && !(L->flags & NCF__FILE_IDS)) ||
        (L->version < 3 && (L->flags & NCF__FILE_INT8)) || ((L->flags & NCF__FILE_INT8) && (L->flags & NCF__FILE_ADAM)))
        return ncf__fail(NCF_ERR_PARSE, "model header has out-of-range sizes or flags");
    memset(&c, 0, sizeof c);
    c.num_users = (int)w[NCF__W_USERS], c.num_items = (int)w[NCF__W_ITEMS], c.model = (ncf_model_type)w[NCF__W_MODEL];
    c.mf_dim = (int)w[NCF__W_MF_DIM], c.num_layers = (int)w[NCF__W_LAYERS];
    for (l = 0; l < NCF_MAX_LAYERS && l < NCF__FILE_SLOTS; l++) {
        uint32_t size = w[NCF__W_SLOTS + l];
        c.layers[l] = (int)(size > 65536 ? 0 : size), c.mlp_reg[l] = ncf__word_f32(w[NCF__W_REGS + l]);
    }
    c.mf_reg = ncf__word_f32(w[NCF__W_MF_REG]), c.lr = ncf__word_f32(w[NCF__W_LR]);
    c.beta1 = ncf__word_f32(w[NCF__W_LR + 1]), c.beta2 = ncf__word_f32(w[NCF__W_LR + 2]);
    c.epsilon = ncf__word_f32(w[NCF__W_LR + 3]), c.adam = (ncf_adam_mode)w[NCF__W_ADAM];
    c.batch_size = w[NCF__W_BATCH] > INT32_MAX ? 0 : (int)w[NCF__W_BATCH];
    c.num_neg = w[NCF__W_NEG] > INT32_MAX ? -1 : (int)w[NCF__W_NEG];
    c.optimizer = (ncf_optimizer)w[NCF__W_OPTIMIZER], c.init_sd = ncf__word_f32(w[NCF__W_INIT_SD]);
    c.seed = ncf__word_u64(w + NCF__W_SEED);
    c.unobserved = L->version >= 3 ? ncf__word_f32(w[NCF__W_UNOBSERVED]) : 0.0f; /* (padding, 0, before 0.7) */
    if (*step > ((uint64_t)1 << 62) || *epoch > NCF_MAX_EPOCH)
        return ncf__fail(NCF_ERR_PARSE, "model header: step %s or epoch %s is past what training reaches",
                         ncf__u64s(*step, 0), ncf__u64s(*epoch, 1));
    if (ncf__check_config(&c, "model header") != NCF_OK) return NCF_ERR_PARSE;
    if ((rc = ncf__model_shell(shell, &c)) != NCF_OK) return rc; /* (no parameter memory yet) */
    L->nrated = 0, L->feat_bytes = 0;
    if (ncf__word_u64(w + NCF__W_PARAMS) != (*shell)->num_params)
        rc = ncf__fail(NCF_ERR_PARSE, "model holds %s parameters, its config needs %s",
                       ncf__u64s(ncf__word_u64(w + NCF__W_PARAMS), 0), ncf__u64s((*shell)->num_params, 1));
    else if (!ncf__read_sizes(&r, L, (uint64_t)c.num_users, (uint64_t)c.num_items))
        rc = ncf__fail(NCF_ERR_PARSE, "model body is shorter than its header promises");
    if (rc == NCF_OK) {
        uint64_t b = 0;
        ncf__lay_out(*shell, L);
        r.at = (size_t)L->feat; /* the features section, the last: its size is its first word */
        if ((L->flags & NCF__FILE_FEATURES) && (L->feat + 8 > r.n || !ncf__get_u64(&r, &b) || b > r.n || b % 8))
            rc = ncf__fail(NCF_ERR_PARSE, "model body is shorter than its header promises");
        else if (L->flags & NCF__FILE_FEATURES) L->feat_bytes = 8 + b, L->end += L->feat_bytes;
    }
    if (rc == NCF_OK && L->end != len - 4)
        rc = ncf__fail(NCF_ERR_PARSE, "model body is %s bytes, its header promises %s",
                       ncf__u64s((uint64_t)len - 4 - L->ids, 0), ncf__u64s(L->end - L->ids, 1));
    if (rc != NCF_OK) ncf_model_free(*shell), *shell = NULL;
    return rc;
}

/* Checks rated-item lists: offsets from 0 to nbytes, never falling, and each user's stream
   whole varints of items inside the catalogue. */
static int ncf__check_rated(const int64_t *off, const uint8_t *bytes, int users, int items, uint64_t nbytes)
{
    int u;
    if (off[0] != 0 || (uint64_t)off[users] != nbytes)
        return ncf__fail(NCF_ERR_PARSE, "model's rated-item offsets do not add up");
    for (u = 0; u < users; u++) { /* (off[u] is in [0, nbytes] by the check before) */
        const uint8_t *p, *end;
        int64_t item = -1;
        uint32_t gap;
        if (off[u + 1] < off[u] || (uint64_t)off[u + 1] > nbytes)
            return ncf__fail(NCF_ERR_PARSE, "model's rated-item offsets do not add up");
        p = bytes + off[u], end = bytes + off[u + 1];
        while (p < end)
            if (!ncf__get_varint(&p, end, &gap) || (item += (int64_t)gap + 1) >= items)
                return ncf__fail(NCF_ERR_PARSE, "model's rated items of user %d are malformed", u);
    }
    return NCF_OK;
}

/* Version 2's lists (a count per user, then the items) as version 3's varint streams. */
static int ncf__rated_from_v2(ncf_model *m, ncf__reader *r, uint64_t nrated)
{
    int U = NCF__USERS(m), u;
    size_t at0 = r->at + 4 * (size_t)U, pass, bytes = 0;
    uint8_t tmp[5] = {0}; /* (the first pass only counts: its bytes go here, unread) */
    if (!(m->rated_ptr = NCF__NEW(int64_t, (size_t)U + 1)))
        return ncf__fail(NCF_ERR_NOMEM, "out of memory for rated items");
    for (pass = 0; pass < 2; pass++) { /* sizes, then the stream */
        ncf__reader cnt = *r, it = *r;
        uint64_t done = 0;
        it.at = at0, bytes = 0;
        for (u = 0; u < U; u++) {
            uint32_t n = 0, item = 0, k;
            int64_t prev = -1;
            ncf__get_u32(&cnt, &n);
            if (n > nrated - done) return ncf__fail(NCF_ERR_PARSE, "model's rated-item counts do not add up");
            m->rated_ptr[u] = (int64_t)bytes;
            for (k = 0; k < n; k++) {
                ncf__get_u32(&it, &item);
                if (item >= (uint32_t)m->cfg.num_items || (int64_t)item <= prev)
                    return ncf__fail(NCF_ERR_PARSE, "model rated item out of range or out of order");
                bytes += (size_t)ncf__put_varint(pass ? m->rated + bytes : tmp, (uint32_t)(item - prev - 1));
                prev = item;
            }
            done += n;
        }
        if (done != nrated) return ncf__fail(NCF_ERR_PARSE, "model's rated-item counts do not add up");
        m->rated_ptr[U] = (int64_t)bytes;
        if (!pass && !(m->rated = NCF__NEW(uint8_t, bytes)))
            return ncf__fail(NCF_ERR_NOMEM, "out of memory for rated items");
    }
    return NCF_OK;
}

/* Id table t (0 users, 1 items) of a file: integers, or text (its offsets then its bytes). */
static int ncf__read_id_table(ncf_model *m, const ncf__layout *L, ncf__reader *r, int t)
{
    size_t k, n = (size_t)(t ? m->cfg.num_items : NCF__USERS(m));
    ncf__ids ids;
    r->at = (size_t)L->id_at[t];
    if (L->flags & (t ? NCF__FILE_ITEM_TEXT : NCF__FILE_USER_TEXT)) {
        int64_t *at = NCF__NEW(int64_t, n + 1);
        char *text = NCF__NEW(char, L->text_bytes[t] ? L->text_bytes[t] : 1);
        *(t ? &m->item_text_at : &m->user_text_at) = at, *(t ? &m->item_text : &m->user_text) = text;
        if (!at || !text) return ncf__fail(NCF_ERR_NOMEM, "out of memory for the id maps");
        for (k = 0; k <= n; k++) {
            uint64_t o = 0;
            ncf__get_u64(r, &o);
            at[k] = o > L->text_bytes[t] ? -1 : (int64_t)o;
        }
        memcpy(text, r->p + r->at, (size_t)L->text_bytes[t]);
        ids = ncf__model_ids(m, t);
        return ncf__check_text_ids(&ids, L->text_bytes[t], t ? "item" : "user");
    }
    if (!(*(t ? &m->raw_item : &m->raw_user) = NCF__NEW(int64_t, n)))
        return ncf__fail(NCF_ERR_NOMEM, "out of memory for the id maps");
    for (k = 0; k < n; k++) {
        uint64_t id = 0;
        ncf__get_u64(r, &id);
        if (id >= (uint64_t)NCF__MAX_RAW_ID)
            return ncf__fail(NCF_ERR_PARSE, "model raw id %s is outside [0, 2^62)", ncf__u64s(id, 0));
        (t ? m->raw_item : m->raw_user)[k] = (int64_t)id;
    }
    return NCF_OK;
}

static int ncf__read_ids(ncf_model *m, const ncf__layout *L, ncf__reader *r)
{
    int rc = ncf__read_id_table(m, L, r, 0);
    if (rc == NCF_OK) rc = ncf__read_id_table(m, L, r, 1);
    return rc == NCF_OK ? ncf__build_id_maps(m) : rc;
}

static int ncf__read_rated(ncf_model *m, const ncf__layout *L, ncf__reader *r)
{
    size_t i, U = (size_t)NCF__USERS(m);
    r->at = (size_t)L->rated + 8;
    if (L->version < 3) return ncf__rated_from_v2(m, r, L->nrated);
    m->rated_ptr = NCF__NEW(int64_t, U + 1), m->rated = NCF__NEW(uint8_t, L->nrated);
    if (!m->rated_ptr || !m->rated) return ncf__fail(NCF_ERR_NOMEM, "out of memory for rated items");
    for (i = 0; i <= U; i++) {
        uint64_t o = 0;
        ncf__get_u64(r, &o);
        m->rated_ptr[i] = o > L->nrated ? -1 : (int64_t)o;
    }
    memcpy(m->rated, r->p + r->at, (size_t)L->nrated);
    return ncf__check_rated(m->rated_ptr, m->rated, NCF__USERS(m), m->cfg.num_items, L->nrated);
}

/* Index of the first int8 row scale that is negative, non-finite, or makes a parameter of
   NCF__MAX_PARAM or more, or n: the one bound, in place and in a copy. */
static size_t ncf__first_bad_scale(const float *s, size_t n)
{
    size_t i;
    for (i = 0; i < n && s[i] >= 0.0f && s[i] < NCF__MAX_PARAM / 127.0f; i++) {}
    return i;
}

/* Tensor t from the file into the model's floats (int8 rows dequantized). */
static int ncf__read_tensor(ncf_model *m, const ncf__layout *L, ncf__reader *r, int t)
{
    const ncf_tensor *T = &m->tensors[t];
    float *x = m->params + T->offset;
    size_t j, rows = (size_t)T->rows, cols = (size_t)T->cols;
    r->at = (size_t)L->tensor[t];
    if (!((L->flags & NCF__FILE_INT8) && ncf__quantized(m, t))) {
        for (j = 0; j < rows * cols; j++) ncf__get_f32(r, &x[j]);
        return NCF_OK;
    }
    for (j = 0; j < rows; j++) {
        float sc = 0.0f;
        ncf__get_f32(r, &sc);
        if (ncf__first_bad_scale(&sc, 1) == 0)
            return ncf__fail(NCF_ERR_DATA, "the model's %s row %lu has a bad scale", T->name, (unsigned long)j);
        ncf__dequantize((const int8_t *)(r->p + L->tensor[t] + 4 * rows + j * cols), sc, (int)cols, x + j * cols);
    }
    return NCF_OK;
}

/* The tensor and index of parameter i, for a message. */
static const char *ncf__param_name(const ncf_model *m, size_t i)
{
    static NCF__TLS char name[64];
    int t;
    for (t = m->num_tensors - 1; t > 0 && m->tensors[t].offset > i; t--) {}
    snprintf(name, sizeof name, "%s[%lu]", m->tensors[t].name, /* (fits: a tensor's name is 15 bytes at most) */
             (unsigned long)(i - m->tensors[t].offset));
    return name;
}

/* Parameters and Adam moments finite and of a size training can make (NCF__MAX_PARAM, NCF__MAX_MOMENT). */
static int ncf__check_finite(const ncf_model *m)
{
    static const char *const what[3] = {"", "Adam's first moment of ", "Adam's second moment of "};
    const float *v[3];
    size_t i;
    int k;
    v[0] = m->params, v[1] = m->adam_m, v[2] = m->adam_v;
    for (k = 0; k < 3; k++)
        if (v[k] &&
            (i = ncf__first_implausible(v[k], m->num_params, k ? NCF__MAX_MOMENT : NCF__MAX_PARAM)) < m->num_params)
            return ncf__fail(NCF_ERR_DATA, "the model's %s%s is %g: not finite or implausibly large (refused)", what[k],
                             ncf__param_name(m, i), (double)v[k][i]);
    return NCF_OK;
}

NCFDEF int ncf_load_mem(ncf_model **out, const void *buf, size_t len)
{
    ncf__layout L;
    ncf__reader r;
    ncf_model *m = NULL;
    uint64_t step, epoch;
    size_t i;
    int rc, t;
    if (!out || !buf) return ncf__fail(NCF_ERR_ARG, "ncf_load_mem: NULL argument");
    *out = NULL;
    if ((rc = ncf__open_file(buf, len, 1, &m, &L, &step, &epoch)) != NCF_OK) return rc;
    r.p = (const uint8_t *)buf, r.n = len - 4;
    rc = ncf__own_params(m);
    if (rc == NCF_OK && (L.flags & NCF__FILE_IDS)) rc = ncf__read_ids(m, &L, &r);
    if (rc == NCF_OK && (L.flags & NCF__FILE_RATED)) rc = ncf__read_rated(m, &L, &r);
    for (t = 0; rc == NCF_OK && t < m->num_tensors; t++) rc = ncf__read_tensor(m, &L, &r, t);
    if (rc == NCF_OK && (L.flags & NCF__FILE_ADAM) && m->adam_m) {
        for (r.at = (size_t)L.adam, i = 0; i < m->num_params; i++) ncf__get_f32(&r, &m->adam_m[i]);
        for (i = 0; i < m->num_params; i++) ncf__get_f32(&r, &m->adam_v[i]);
    }
#ifndef NCF_INFERENCE_ONLY /* (a device serves the known entities and skips the features) */
    if (rc == NCF_OK && (L.flags & NCF__FILE_FEATURES))
        rc = ncf__features_read(m, (const uint8_t *)buf + L.feat, L.feat_bytes);
#endif
    if (rc == NCF_OK) rc = ncf__check_finite(m);
    if (rc != NCF_OK) {
        ncf_model_free(m);
        return rc;
    }
    m->step = (int64_t)step, m->epoch = (int64_t)epoch; /* (both checked in the header) */
    ncf__refresh_cache(m);                              /* serving only reads the model from here on */
    *out = m;
    return NCF_OK;
}

static int ncf__little_endian(void)
{
    const uint32_t one = 1;
    return *(const uint8_t *)&one == 1;
}

/* Id table t where it sits in the file, checked: integers or text, ascending. */
static int ncf__point_ids(ncf_model *m, const uint8_t *p, const ncf__layout *L, int t)
{
    int k, n = t ? m->cfg.num_items : m->cfg.num_users;
    int64_t *at = (int64_t *)(uintptr_t)(p + L->id_at[t]);
    if (L->flags & (t ? NCF__FILE_ITEM_TEXT : NCF__FILE_USER_TEXT)) {
        ncf__ids ids;
        *(t ? &m->item_text_at : &m->user_text_at) = at;
        *(t ? &m->item_text : &m->user_text) = (char *)(uintptr_t)(p + L->id_at[t] + 8 * ((uint64_t)n + 1));
        ids = ncf__model_ids(m, t);
        return ncf__check_text_ids(&ids, L->text_bytes[t], t ? "item" : "user"); /* (the offsets too) */
    }
    *(t ? &m->raw_item : &m->raw_user) = at;
    for (k = 0; k < n; k++) {
        if (at[k] < 0 || at[k] >= NCF__MAX_RAW_ID)
            return ncf__fail(NCF_ERR_PARSE, "model raw id %s is outside [0, 2^62)", ncf__u64s((uint64_t)at[k], 0));
        if (k && at[k] <= at[k - 1])
            return ncf__fail(NCF_ERR_PARSE,
                             "model raw %s ids do not ascend (at %d), as read in place they must; "
                             "ncf_load_mem reads it",
                             t ? "item" : "user", k);
    }
    return NCF_OK;
}

/* Points an in-place model's ids, rated items and tensors into the file; scan: every value
   checked finite (the caller has not verified the file). */
static int ncf__point_into(ncf_model *m, const uint8_t *p, const ncf__layout *L, int scan)
{
    float *v[NCF_MAX_TENSORS];
    const float *qs[NCF_MAX_TENSORS];
    const int8_t *q[NCF_MAX_TENSORS];
    int U = m->cfg.num_users, I = m->cfg.num_items, t, rc;
    for (t = 0; t < 2 && (L->flags & NCF__FILE_IDS); t++)
        if ((rc = ncf__point_ids(m, p, L, t)) != NCF_OK) return rc;
    if (L->flags & NCF__FILE_RATED) {
        m->rated_ptr = (int64_t *)(uintptr_t)(p + L->rated + 8),
        m->rated = (uint8_t *)(uintptr_t)(p + L->rated + 8 + 8 * ((uint64_t)U + 1));
        if ((rc = ncf__check_rated(m->rated_ptr, m->rated, U, I, L->nrated)) != NCF_OK) return rc;
    }
    for (t = 0; t < m->num_tensors; t++) {
        size_t rows = (size_t)m->tensors[t].rows, n = rows * (size_t)m->tensors[t].cols, bad;
        float *x = (float *)(uintptr_t)(p + L->tensor[t]);
        int quant = (L->flags & NCF__FILE_INT8) && ncf__quantized(m, t);
        v[t] = quant ? NULL : x, qs[t] = quant ? x : NULL, q[t] = quant ? (const int8_t *)(x + rows) : NULL;
        if (scan &&
            (bad = quant ? ncf__first_bad_scale(x, rows) : ncf__first_implausible(x, n, NCF__MAX_PARAM)) <
                (quant ? rows : n))
            return ncf__fail(NCF_ERR_DATA, "the model's %s holds a non-finite value or a bad scale (at %lu): refused",
                             m->tensors[t].name, (unsigned long)bad);
    }
    m->params = L->flags & NCF__FILE_INT8 ? NULL : v[0];
    if (scan && (L->flags & NCF__FILE_ADAM)) { /* not used in place, but checked as a copy checks it */
        size_t bad =
            ncf__first_implausible((const float *)(uintptr_t)(p + L->adam), 2 * m->num_params, NCF__MAX_MOMENT);
        if (bad < 2 * m->num_params)
            return ncf__fail(NCF_ERR_DATA, "the model's Adam moment %lu is not finite or implausibly large: refused",
                             (unsigned long)bad);
    }
    ncf__point_views(m, v, q, qs);
    return NCF_OK;
}

NCFDEF int ncf_model_open(ncf_model **out, const void *buf, size_t len, int flags)
{
    ncf__layout L;
    ncf_model *m = NULL;
    uint64_t step, epoch;
    int rc, verified = flags & NCF_OPEN_VERIFIED;
    if (flags & ~NCF_OPEN_VERIFIED)
        return ncf__fail(NCF_ERR_ARG, "ncf_model_open: flags 0x%x hold bits other than NCF_OPEN_VERIFIED",
                         (unsigned)flags);
    if (!out || !buf) return ncf__fail(NCF_ERR_ARG, "ncf_model_open: NULL argument");
    *out = NULL;
    if (!ncf__little_endian()) return ncf_load_mem(out, buf, len); /* the file is little-endian: a copy */
    if ((uintptr_t)buf % 8)
        return ncf__fail(NCF_ERR_ARG, "ncf_model_open: the buffer is not 8-byte aligned (address ends in 0x%x)",
                         (unsigned)((uintptr_t)buf & 7));
    if ((rc = ncf__open_file(buf, len, !verified, &m, &L, &step, &epoch)) != NCF_OK) return rc;
    if (L.version < 3) {
        ncf_model_free(m);
        return ncf__fail(NCF_ERR_PARSE,
                         "model format version %u is not laid out to be read in place: ncf_load_mem "
                         "reads it, and ncf_save_mem writes version %d",
                         (unsigned)L.version, NCF_FORMAT_VERSION);
    }
    m->scratch->in_place = 1;
    if ((rc = ncf__point_into(m, (const uint8_t *)buf, &L, !verified)) != NCF_OK) {
        ncf_model_free(m);
        return rc;
    }
    m->step = (int64_t)step, m->epoch = (int64_t)epoch; /* (both checked in the header) */
    *out = m;
    return NCF_OK;
}

/* ---- >>safe-save: files written whole or not at all ------------------------------------------ */
#ifndef NCF_NO_STDIO
/* Saving never damages what is at PATH: the bytes go to a new temporary file beside it,
   created exclusively under a fresh name (so it follows no planted link and meets no other
   saver's file), flushed to the disk, then renamed over PATH in one step; an existing
   file's permissions are kept. Anything that fails removes the temporary file. */

#if defined(NCF__POSIX_FILES) && \
    (defined(__linux__) || defined(__APPLE__) || defined(__FreeBSD__) || defined(__OpenBSD__) || \
     defined(__NetBSD__) || defined(__DragonFly__))
#include <sys/file.h>
#define NCF__FLOCK 1 /* flock: a lock per open file, so another thread of this process sees it too */
#endif

struct ncf__outfile {
#if defined(_WIN32)
    HANDLE h;
#elif defined(NCF__POSIX_FILES)
    int fd;
#else
    FILE *f;
#endif
    int rc;       /* the first failure, kept: every later call returns it */
    int in_place; /* written to PATH itself ("-", a pipe, a terminal, a link): never replaced */
    size_t used;  /* bytes in buf not yet written */
    char path[4200], name[4200];
    char buf[1 << 16];
};

/* The OS's reason for the last failure, for error messages. */
static const char *ncf__os_reason(void)
{
#if defined(_WIN32)
    static NCF__TLS char why[48];
    snprintf(why, sizeof why, "Windows error %lu", (unsigned long)GetLastError());
    return why;
#elif defined(NCF__POSIX_FILES)
    return strerror(errno);
#else
    return "the C library does not say why";
#endif
}

#if defined(NCF__POSIX_FILES)
/* The folder of path, "." when it names none. */
static void ncf__dir_of(const char *path, char *dir, size_t size)
{
    const char *slash = strrchr(path, '/');
    if (slash) snprintf(dir, size, "%.*s", (int)(slash - path) + (slash == path), path); /* (fits: size > path's) */
    else snprintf(dir, size, ".");
}

/* Whether name is base's temporary file as ncf__tmp_create names them: base, ".tmp-", then
   exactly 12 lowercase hex digits. A user's "m.ncf.tmp-backup" is not. */
static int ncf__is_our_tmp_name(const char *name, const char *base, size_t bl)
{
    int k;
    if (strncmp(name, base, bl) != 0 || strncmp(name + bl, ".tmp-", 5) != 0) return 0;
    for (k = 0; k < 12; k++)
        if (!((name[bl + 5 + k] >= '0' && name[bl + 5 + k] <= '9') ||
              (name[bl + 5 + k] >= 'a' && name[bl + 5 + k] <= 'f')))
            return 0;
    return name[bl + 17] == 0;
}

/* Whether nobody holds the file's lock: no saver in another process (fcntl's lock, as 0.6
   took it) nor in this one (flock's, which fcntl cannot see from the same process). */
static int ncf__unlocked(int fd)
{
    struct flock lock;
#if defined(NCF__FLOCK)
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) return 0;
#endif
    memset(&lock, 0, sizeof lock);
    lock.l_type = F_WRLCK, lock.l_whence = SEEK_SET;
    return fcntl(fd, F_SETLK, &lock) == 0;
}

/* Removes temporary files of PATH that are provably this library's and dead: named as it
   names them, regular, untouched for 2 s, and locked by no live save (a killed save's file;
   its lock died with it). */
static void ncf__remove_orphans(const char *path)
{
    char dir[4200], name[8400];
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    size_t bl = strlen(base);
    struct dirent *e;
    DIR *d;
    if (!bl) return;
    ncf__dir_of(path, dir, sizeof dir);
    if (!(d = opendir(dir))) return;
    while ((e = readdir(d)) != NULL) {
        struct stat st;
        int fd;
        if (!ncf__is_our_tmp_name(e->d_name, base, bl)) continue;
        if (snprintf(name, sizeof name, "%s/%s", dir, e->d_name) >= (int)sizeof name) continue; /* (never a cut name) */
        if (stat(name, &st) != 0 || !S_ISREG(st.st_mode) || difftime(time(NULL), st.st_mtime) < 2) continue;
        if ((fd = open(name, O_RDWR)) < 0) continue; /* (unlink removes the name alone, never what a link names) */
        if (ncf__unlocked(fd)) unlink(name);
        close(fd);
    }
    closedir(d);
}
#endif

/* Creates PATH.tmp-XXXXXXXXXXXX exclusively, retrying under another name if it exists. */
static int ncf__tmp_create(ncf__outfile *t, const char *path)
{
    static NCF__TLS uint64_t counter;
    uint64_t base = ncf__mix64(NCF__PID() ^ (uint64_t)(size_t)t ^ ((uint64_t)(size_t)&counter << 20)), r;
    int tries;
#if defined(NCF__POSIX_FILES)
    struct stat st;
    int existing = stat(path, &st) == 0, mode = existing ? (int)(st.st_mode & 07777) : 0666;
    if (existing && !S_ISREG(st.st_mode)) /* a device, a FIFO, a directory (or a link to one) */
        return ncf__fail(NCF_ERR_IO, "%s: exists and is not a regular file: not replaced", path);
#endif
    for (tries = 0; tries < 100; tries++) {
        r = ncf__mix64(base + ++counter + (uint64_t)tries);
        if (snprintf(t->name, sizeof t->name, "%s.tmp-%012llx", path, (unsigned long long)(r >> 16)) >=
            (int)sizeof t->name)
            return ncf__fail(NCF_ERR_ARG, "%s: path too long", path);
#if defined(_WIN32)
        t->h = CreateFileA(t->name, GENERIC_WRITE, 0, NULL, CREATE_NEW, FILE_ATTRIBUTE_NORMAL, NULL);
        if (t->h != INVALID_HANDLE_VALUE) return NCF_OK;
        if (GetLastError() != ERROR_FILE_EXISTS && GetLastError() != ERROR_ALREADY_EXISTS) break;
#elif defined(NCF__POSIX_FILES)
        t->fd = open(t->name, O_WRONLY | O_CREAT | O_EXCL, mode);
        if (t->fd >= 0) {
            struct flock lock; /* held until the file is renamed: a live save's file is never an orphan */
            memset(&lock, 0, sizeof lock);
            lock.l_type = F_WRLCK, lock.l_whence = SEEK_SET;
            (void)fcntl(t->fd, F_SETLK, &lock); /* (a file system without locks: orphans stay) */
#if defined(NCF__FLOCK)
            (void)flock(t->fd, LOCK_EX | LOCK_NB);
#endif
            if (existing) chmod(t->name, (mode_t)mode); /* exactly, whatever the umask */
            return NCF_OK;
        }
        if (errno != EEXIST) break;
#else
        t->f = fopen(t->name, "rb"); /* plain C cannot create exclusively: skip names in use */
        if (t->f) {
            fclose(t->f);
            continue;
        }
        t->f = fopen(t->name, "wb");
        if (t->f) return NCF_OK;
        break;
#endif
    }
    return ncf__fail(NCF_ERR_IO, "%s: cannot create a temporary file beside it (%s)", path, ncf__os_reason());
}

/* Writes p[0..len) to the temporary file; the first failure is kept in t->rc. */
static int ncf__tmp_put(ncf__outfile *t, const char *p, size_t len)
{
    int ok = 1;
#if defined(_WIN32)
    while (ok && len > 0) {
        DWORD chunk = len > (1u << 30) ? (1u << 30) : (DWORD)len, done = 0;
        ok = WriteFile(t->h, p, chunk, &done, NULL) && done == chunk;
        p += chunk, len -= chunk;
    }
#elif defined(NCF__POSIX_FILES)
    while (ok && len > 0) {
        ssize_t done = write(t->fd, p, len > (1u << 30) ? (1u << 30) : len);
        if (done < 0 && errno == EINTR) continue;
        ok = done > 0;
        if (ok) p += done, len -= (size_t)done;
    }
#else
    ok = fwrite(p, 1, len, t->f) == len;
#endif
    if (!ok && t->rc == NCF_OK)
        t->rc = ncf__fail(NCF_ERR_IO, "%s: writing %s failed (%s)", t->path, t->name, ncf__os_reason());
    return t->rc;
}

/* What is buffered, written and flushed to the disk (a pipe or a terminal has no disk). */
static int ncf__tmp_sync(ncf__outfile *t)
{
    if (t->rc == NCF_OK && t->used) ncf__tmp_put(t, t->buf, t->used);
    t->used = 0;
    if (t->rc != NCF_OK || t->in_place) return t->rc;
#if defined(_WIN32)
    if (!FlushFileBuffers(t->h))
#elif defined(NCF__POSIX_FILES)
    if (fsync(t->fd) != 0)
#else
    if (fflush(t->f) != 0)
#endif
        t->rc = ncf__fail(NCF_ERR_IO, "%s: writing %s failed (%s)", t->path, t->name, ncf__os_reason());
    return t->rc;
}

static void ncf__tmp_close(ncf__outfile *t)
{
#if defined(_WIN32)
    if (t->h != INVALID_HANDLE_VALUE) CloseHandle(t->h), t->h = INVALID_HANDLE_VALUE;
#elif defined(NCF__POSIX_FILES)
    if (t->fd >= 0) close(t->fd), t->fd = -1;
#else
    if (t->f && fclose(t->f) != 0 && t->rc == NCF_OK)
        t->rc = ncf__fail(NCF_ERR_IO, "%s: writing %s failed (%s)", t->path, t->name, ncf__os_reason());
    t->f = NULL;
#endif
}

/* Renames the temporary file over PATH (replacing it; Windows' rename does not), then on
   POSIX flushes the directory so the rename itself survives a crash. The file is closed
   after the rename there, so its lock marks it live until it has its name. */
static int ncf__tmp_commit(ncf__outfile *t)
{
    const char *path = t->path;
    if (t->in_place) {
        ncf__tmp_close(t);
        return t->rc;
    }
#if defined(_WIN32)
    ncf__tmp_close(t);
    if (!MoveFileExA(t->name, path, MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH))
        return ncf__fail(NCF_ERR_IO, "%s: cannot replace it with %s (%s)", path, t->name, ncf__os_reason());
#else
#if !defined(NCF__POSIX_FILES)
    ncf__tmp_close(t);
    if (t->rc != NCF_OK) return t->rc;
#endif
    if (rename(t->name, path) != 0)
        return ncf__fail(NCF_ERR_IO, "%s: cannot replace it with %s (%s)", path, t->name, ncf__os_reason());
#if defined(NCF__POSIX_FILES)
    ncf__tmp_close(t); /* (its locks with it) */
    {
        char dir[4200];
        int fd;
        ncf__dir_of(path, dir, sizeof dir);
        if ((fd = open(dir, O_RDONLY)) >= 0) { /* some file systems cannot; the file is saved anyway */
            (void)fsync(fd);
            close(fd);
        }
    }
#endif
#endif
    return NCF_OK;
}

static int ncf__outfile_open(ncf__outfile **out, const char *path)
{
    ncf__outfile *t;
    size_t n = path ? strlen(path) : 0;
    int rc;
    if (!out) return ncf__fail(NCF_ERR_ARG, "ncf__outfile_open: NULL argument");
    *out = NULL;
    if (!n) return ncf__fail(NCF_ERR_ARG, "ncf__outfile_open: NULL or empty path");
    if (path[n - 1] == '/' || path[n - 1] == '\\') return ncf__fail(NCF_ERR_IO, "%s: names a folder, not a file", path);
    if (n >= sizeof t->path - 20) return ncf__fail(NCF_ERR_ARG, "%s: path too long", path);
    if (!(t = NCF__NEW(ncf__outfile, 1))) return ncf__fail(NCF_ERR_NOMEM, "%s: out of memory", path);
    memcpy(t->path, path, n + 1);
    t->rc = NCF_OK, t->used = 0, t->in_place = 0;
#if defined(NCF__POSIX_FILES)
    {
        struct stat st;
        int there = stat(path, &st) == 0;
        if (there && S_ISDIR(st.st_mode)) {
            rc = ncf__fail(NCF_ERR_IO, "%s: is a folder, not a file", path);
        } else if (!strcmp(path, "-") || (there && !S_ISREG(st.st_mode)) || !strncmp(path, "/dev/", 5) ||
                   !strncmp(path, "/proc/", 6)) {
            /* standard output, a pipe, a terminal, a device, or the system's names for them
               (/dev/stdout names a link to a pipe or to the file the shell opened): written in
               place, never replaced */
            int to_out = !strcmp(path, "-") || !strcmp(path, "/dev/stdout") || !strcmp(path, "/dev/fd/1"),
                err = !strcmp(path, "/dev/stderr") || !strcmp(path, "/dev/fd/2");
            memcpy(t->name, path, n + 1), t->in_place = 1;
            if (to_out || err) fflush(to_out ? stdout : stderr); /* (what the program printed comes first) */
            t->fd = to_out ? dup(STDOUT_FILENO)
                : err      ? dup(STDERR_FILENO)
                           : open(path, O_WRONLY | (there && S_ISREG(st.st_mode) ? O_TRUNC : 0)); /* (never made) */
            rc =
                t->fd >= 0 ? NCF_OK : ncf__fail(NCF_ERR_IO, "%s: cannot open for writing (%s)", path, ncf__os_reason());
        } else {
            ncf__remove_orphans(path), rc = ncf__tmp_create(t, path); /* (before: the sweep beside it) */
        }
    }
#else
    rc = ncf__tmp_create(t, path);
#endif
    if (rc != NCF_OK) {
        NCF_FREE(t);
        return rc;
    }
    *out = t;
    return NCF_OK;
}

static int ncf__outfile_write(ncf__outfile *t, const void *buf, size_t len)
{
    if (!t || (!buf && len)) return ncf__fail(NCF_ERR_ARG, "ncf__outfile_write: NULL argument");
    if (t->rc != NCF_OK) return t->rc;
    if (t->used + len > sizeof t->buf && t->used) ncf__tmp_put(t, t->buf, t->used), t->used = 0;
    if (len >= sizeof t->buf) return ncf__tmp_put(t, (const char *)buf, len);
    if (len) memcpy(t->buf + t->used, buf, len), t->used += len;
    return t->rc;
}

static int ncf__outfile_printf(ncf__outfile *t, const char *fmt, ...)
{
    va_list ap;
    int n;
    char *big;
    if (!t || !fmt) return ncf__fail(NCF_ERR_ARG, "ncf__outfile_printf: NULL argument");
    if (t->rc != NCF_OK) return t->rc;
    va_start(ap, fmt);
    n = vsnprintf(t->buf + t->used, sizeof t->buf - t->used, fmt, ap);
    va_end(ap);
    if (n < 0) return t->rc = ncf__fail(NCF_ERR_ARG, "ncf__outfile_printf: '%s' cannot be formatted", fmt);
    if ((size_t)n < sizeof t->buf - t->used) {
        t->used += (size_t)n;
        return NCF_OK;
    }
    if (!(big = NCF__NEW(char, (size_t)n + 1))) return t->rc = ncf__fail(NCF_ERR_NOMEM, "%s: out of memory", t->path);
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    ncf__outfile_write(t, big, (size_t)n);
    NCF_FREE(big);
    return t->rc;
}

static int ncf__outfile_commit(ncf__outfile *t)
{
    int rc;
    if (!t) return ncf__fail(NCF_ERR_ARG, "ncf__outfile_commit: NULL argument");
    if ((rc = ncf__tmp_sync(t)) == NCF_OK && (rc = ncf__tmp_commit(t)) == NCF_OK) {
        NCF_FREE(t);
        return NCF_OK;
    }
    ncf__outfile_discard(t);
    return rc;
}

static void ncf__outfile_discard(ncf__outfile *t)
{
    if (!t) return;
    ncf__tmp_close(t);
    if (!t->in_place) remove(t->name);
    NCF_FREE(t);
}

/* A multi-file output committed as one: every member flushed to the disk first (a full disk
   fails there, before any path is replaced), then each renamed over its path. With rc not
   NCF_OK, or a flush failing, every member is discarded and every path left as it was. NULL
   members are skipped; each is freed. Returns the first failure's code. */
static int ncf__outfiles_commit(ncf__outfile **out, int n, int rc)
{
    int k;
    for (k = 0; k < n && rc == NCF_OK; k++)
        if (out[k]) rc = ncf__tmp_sync(out[k]);
    for (k = 0; k < n; k++) {
        if (!out[k]) continue;
        if (rc == NCF_OK) rc = ncf__outfile_commit(out[k]);
        else ncf__outfile_discard(out[k]);
        out[k] = NULL;
    }
    return rc;
}

NCFDEF int ncf_save(const ncf_model *m, const char *path, int flags)
{
    void *buf;
    size_t len;
    ncf__outfile *t;
    int rc;
    if (!path || !*path) return ncf__fail(NCF_ERR_ARG, "ncf_save: NULL or empty path");
    if ((rc = ncf_save_mem(m, flags, &buf, &len)) != NCF_OK) return rc;
    if ((rc = ncf__outfile_open(&t, path)) == NCF_OK) {
        ncf__outfile_write(t, buf, len);
        rc = ncf__outfile_commit(t);
    }
    NCF_FREE(buf);
    return rc;
}

NCFDEF int ncf_load(ncf_model **out, const char *path)
{
    char *buf = NULL;
    size_t len = 0;
    int rc;
    if (!out || !path) return ncf__fail(NCF_ERR_ARG, "ncf_load: NULL argument");
    *out = NULL;
    if ((rc = ncf__read_file(path, &buf, &len, "NCF")) != NCF_OK) return rc; /* ("NCF" and its NUL) */
    rc = ncf_load_mem(out, buf, len);
    NCF_FREE(buf);
    return rc == NCF_OK ? NCF_OK : ncf__prefix_error(rc, path);
}

NCFDEF int ncf_model_read_file(const char *path, void **buf, size_t *len)
{
    char *b = NULL;
    int rc;
    if (!buf || !len || !path) return ncf__fail(NCF_ERR_ARG, "ncf_model_read_file: NULL argument");
    *buf = NULL, *len = 0;
    if ((rc = ncf__read_file(path, &b, len, "NCF")) != NCF_OK) return rc;
    if ((uintptr_t)b % 8) { /* (an allocator that does not align as malloc does) */
        NCF_FREE(b), *len = 0;
        return ncf__fail(NCF_ERR_NOMEM, "%s: the allocator gave a block not 8-byte aligned", path);
    }
    *buf = b;
    return NCF_OK;
}
#endif

/* ---- >>mpi (src/mpi.c) ----------------------------------------------------------------------- */
#if defined(NCF_MPI) && !defined(NCF_INFERENCE_ONLY)
/* Shards, gradient folds over ranks, collective calls. */
/* Data parallel, users sharded: the users fall in NCF_MPI_GROUPS fixed groups (cut where the
   positives cross 1/G of them), and rank r holds groups [G*r/P, G*(r+1)/P): their users'
   positives, and the only up-to-date copy of their embedding rows. A step:
   1. each rank draws the batch's examples of its users and orders them by group (by position
      within one), and runs them forward and backward;
   2. the dense gradient of each group is summed from zero over its examples in order, and the
      groups are folded as a fixed binary tree, ((g_0 + g_1) + (g_2 + g_3)) + ..., a node's sum
      kept by the rank of its first group, a right child on another rank sent to it (log2 G
      levels, at most one message in and one out a level), and rank 0's root broadcast; the
      item rows the same, as lists of (item, sum) records of the items the batch touched; the
      loss by group, in group order. Since the groups and the tree do not move with P, neither
      does the model;
   3. every rank applies the same update to the dense layers and the items; each user's row,
      whose examples are all on its rank, is summed and updated there, and travels only when
      ncf_mpi_sync (or the end of ncf_mpi_train_epoch) copies every rank's users to all. A model
      shard holds its rank's users' rows only, indexed from its first user (scratch->mpi.user0): the
      batch's users become its rows in step 1, evaluation subtracts user0, and the rows never
      travel except to rank 0, in pieces, as ncf_mpi_save writes the file. */

/* A fold's messages are tagged by kind and tree level (the levels, log2 G, stay under 100). */
#define NCF__MPI_TAG_DENSE 7300
#define NCF__MPI_TAG_ROWS 7400

/* The status agreed over comm, every rank with the message of the first rank that failed it. */
static int ncf__mpi_agree(MPI_Comm comm, int rc)
{
    int all = rc, rank = 0, mine, who = 0;
    if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS || MPI_Allreduce(&rc, &all, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS)
        return ncf__fail(NCF_ERR_IO, "MPI_Allreduce failed while the ranks compared their status");
    if (all == NCF_OK) return NCF_OK;
    mine = rc == all ? rank : INT32_MAX;
    if (MPI_Allreduce(&mine, &who, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS ||
        MPI_Bcast(ncf__errbuf, (int)sizeof ncf__errbuf, MPI_CHAR, who, comm) != MPI_SUCCESS)
        return ncf__fail(NCF_ERR_IO, "MPI failed while the ranks shared an error");
    return all;
}

/* The first user of group g of G: where the whole data's positives cross g/G of them. */
static int ncf__group_first_user(const ncf_dataset *d, int g, int G)
{
    int64_t target = d->num_train / G * g + d->num_train % G * g / G; /* num_train*g/G, no overflow */
    int lo;
    if (g <= 0) return 0;
    if (g >= G) return d->num_users;
    NCF__FIRST_NOT(int, lo, d->num_users, d->user_ptr[mid] < target); /* the first u with user_ptr[u] >= target */
    return lo;
}

/* This rank's users [*lo, *hi) for comm's ranks: those ncf_mpi_shard keeps of whole data, or a
   shard's (which must be this rank's for comm). */
static int ncf__my_users(const ncf_dataset *d, MPI_Comm comm, int *lo, int *hi, const char *what)
{
    int rank = 0, P = 1, G = NCF_MPI_GROUPS, g0, g1;
    if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS || MPI_Comm_size(comm, &P) != MPI_SUCCESS)
        return ncf__fail(NCF_ERR_ARG, "%s: not a valid communicator", what);
    if (P > G)
        return ncf__fail(NCF_ERR_ARG,
                         "%s: %d ranks, but the users fall in %d groups (build with a larger NCF_MPI_GROUPS)", what, P,
                         G);
    g0 = (int)((int64_t)G * rank / P), g1 = (int)((int64_t)G * (rank + 1) / P);
    if (!ncf__is_shard(d)) {
        *lo = ncf__group_first_user(d, g0, G), *hi = ncf__group_first_user(d, g1, G);
        return NCF_OK;
    }
    *lo = d->shard.user_lo, *hi = d->shard.user_hi;
    if (!d->shard.groups || *lo != d->shard.groups[g0] || *hi != d->shard.groups[g1])
        return ncf__fail(NCF_ERR_ARG, "%s: the data is not this rank's shard for %d ranks", what, P);
    return NCF_OK;
}

/* A copy of rows [lo, hi) of a [users][n] table, or NULL (also for none to copy). */
static int32_t *ncf__rows_copy(const int32_t *t, int n, int lo, int hi, int *failed)
{
    int32_t *c;
    if (!t || n <= 0) return NULL;
    c = NCF__NEW(int32_t, (size_t)(hi - lo) * n + 1);
    if (c) memcpy(c, t + (size_t)lo * n, sizeof(int32_t) * (size_t)(hi - lo) * n);
    else *failed = 1;
    return c;
}

NCFDEF int ncf_mpi_shard(ncf_dataset *ds, MPI_Comm comm)
{
    int lo = 0, hi = 0, u, g, failed = 0, rc = NCF_OK, *groups = NULL;
    int64_t plo, phi, n;
    int32_t *items = NULL, *tu = NULL, *en = NULL, *vn = NULL;
    float *wt = NULL;
    if (!ds || !ds->user_ptr) rc = ncf__fail(NCF_ERR_ARG, "ncf_mpi_shard: need a loaded dataset");
    else if (ncf__is_shard(ds)) rc = ncf__fail(NCF_ERR_ARG, "ncf_mpi_shard: the dataset is a shard already");
    else if (ds->num_train <= 0) rc = ncf__fail(NCF_ERR_DATA, "ncf_mpi_shard: the dataset has no training positives");
    else if (ds->test_ptr)
        rc = ncf__fail(NCF_ERR_ARG, "ncf_mpi_shard: a split of many items per user is evaluated on one process");
    else rc = ncf__my_users(ds, comm, &lo, &hi, "ncf_mpi_shard");
    if ((rc = ncf__mpi_agree(comm, rc)) != NCF_OK) return rc;
    plo = ds->user_ptr[lo], phi = ds->user_ptr[hi], n = phi - plo;
    items = NCF__NEW(int32_t, n + 1), tu = NCF__NEW(int32_t, n + 1), groups = NCF__NEW(int, NCF_MPI_GROUPS + 1);
    if (ds->weight && !(wt = NCF__NEW(float, n + 1))) failed = 1;
    en = ncf__rows_copy(ds->eval_neg, ds->num_eval_neg, lo, hi, &failed);
    vn = ncf__rows_copy(ds->val_neg, ds->num_val_neg, lo, hi, &failed);
    if (!items || !tu || !groups || failed)
        rc = ncf__fail(NCF_ERR_NOMEM, "ncf_mpi_shard: out of memory for %lld positives", (long long)n);
    if ((rc = ncf__mpi_agree(comm, rc)) != NCF_OK) {
        NCF_FREE(items);
        NCF_FREE(tu);
        NCF_FREE(en);
        NCF_FREE(vn);
        NCF_FREE(groups);
        NCF_FREE(wt);
        return rc;
    }
    for (g = 0; g <= NCF_MPI_GROUPS; g++) groups[g] = ncf__group_first_user(ds, g, NCF_MPI_GROUPS);
    memcpy(items, ds->items + plo, sizeof(int32_t) * (size_t)n);
    memcpy(tu, ds->train_user + plo, sizeof(int32_t) * (size_t)n);
    if (wt) memcpy(wt, ds->weight + plo, sizeof(float) * (size_t)n);
    NCF_FREE(ds->items);
    NCF_FREE(ds->train_user);
    NCF_FREE(ds->eval_neg);
    NCF_FREE(ds->val_neg);
    NCF_FREE(ds->weight);
    ds->items = items, ds->train_user = tu, ds->eval_neg = en, ds->val_neg = vn, ds->shard.groups = groups,
    ds->weight = wt;
    for (u = 0; u <= ds->num_users; u++) /* the other users look empty */
        ds->user_ptr[u] = (ds->user_ptr[u] < plo ? plo : ds->user_ptr[u] > phi ? phi : ds->user_ptr[u]) - plo;
    for (u = 0; u < ds->num_users; u++)
        if (u < lo || u >= hi) {
            ds->test_item[u] = -1;
            if (ds->val_item) ds->val_item[u] = -1;
        }
    ds->shard.user_lo = lo, ds->shard.user_hi = hi;
    ds->shard.train_lo = plo, ds->shard.total_train = ds->num_train, ds->num_train = n;
    return NCF_OK;
}

/* ---- the distributed loader: each rank parses a byte range of the log ---- */
/* Every rank reads the lines between two line ends of the file; each line then goes to the
   rank that gathers all of its user's lines (contiguous users, about 1/P of the lines each),
   where the one-process build runs on them, the filters' counts summed over the ranks. The
   users then move to the ranks ncf_mpi_shard would give them. Ids are numbered in ascending
   order from the union of every rank's distinct ids, as one process numbers them. */

#define NCF__MPI_IO_MAX (1 << 30) /* bytes or elements in one MPI call */

/* ncf__build_opts.reduce over the communicator at ctx, in pieces MPI counts can hold. */
static int ncf__mpi_reduce(void *ctx, void *v, int64_t n, int op)
{
    MPI_Comm comm = *(MPI_Comm *)ctx;
    MPI_Datatype t = op == NCF__SUM_I64 ? MPI_INT64_T : MPI_UINT8_T;
    MPI_Op how = op == NCF__SUM_I64 ? MPI_SUM : op == NCF__ALL_U8 ? MPI_MIN : MPI_MAX;
    size_t size = op == NCF__SUM_I64 ? 8 : 1;
    int64_t at;
    if (op == NCF__AGREE) return ncf__mpi_agree(comm, *(int *)v);
    for (at = 0; at < n; at += NCF__MPI_IO_MAX) {
        int k = n - at < NCF__MPI_IO_MAX ? (int)(n - at) : NCF__MPI_IO_MAX;
        if (MPI_Allreduce(MPI_IN_PLACE, (char *)v + (size_t)at * size, k, t, how, comm) != MPI_SUCCESS)
            return ncf__fail(NCF_ERR_IO, "MPI_Allreduce failed summing the filters' counts");
    }
    return NCF_OK;
}

static int ncf__mpi_read_at(MPI_File f, int64_t at, char *buf, int64_t n)
{
    while (n > 0) {
        int k = n > NCF__MPI_IO_MAX ? NCF__MPI_IO_MAX : (int)n, got = 0;
        MPI_Status st;
        if (MPI_File_read_at(f, (MPI_Offset)at, buf, k, MPI_CHAR, &st) != MPI_SUCCESS ||
            MPI_Get_count(&st, MPI_CHAR, &got) != MPI_SUCCESS || got != k)
            return 0;
        at += k, buf += k, n -= k;
    }
    return 1;
}

/* The first line start at or after s > 0: past the line end (LF, CRLF, CR) at or after s - 1. */
static int ncf__mpi_line_start(MPI_File f, int64_t size, int64_t s, int64_t *start)
{
    char buf[4097];
    int64_t at = s - 1, n, i;
    for (; at < size; at += n) {
        n = size - at < 4096 ? size - at : 4096;
        if (!ncf__mpi_read_at(f, at, buf, n + (at + n < size))) return 0;
        for (i = 0; i < n; i++)
            if (buf[i] == '\n' || buf[i] == '\r') {
                *start = at + i + 1 + (buf[i] == '\r' && at + i + 1 < size && buf[i + 1] == '\n');
                return 1;
            }
    }
    *start = size;
    return 1;
}

/* Whether [p, end) holds the records the dialect is judged on, whatever the separator: each
   candidate's first NCF__SNIFF records end before end. */
static int ncf__sniff_enough(const char *p, const char *end, const char *given)
{
    ncf__span f[NCF__MAX_FIELDS];
    int c, k, nf;
    for (c = 0; c < 7; c++) {
        ncf__cursor C;
        const char *sep = c < 6 ? ncf__seps[c] : given;
        if (!sep[0]) continue;
        C.p = p, C.end = end, C.line = 0, C.next = 1;
        for (k = 0; k < NCF__SNIFF && (nf = ncf__record(&C, sep, f, NCF__MAX_FIELDS)) != -1;)
            if (nf < 0) return 0;
            else k += nf > 0;
        if (C.p >= end) return 0;
    }
    return 1;
}

/* The dialect, as ncf__parse_log finds it: rank 0 reads the file's first lines (doubling what it
   reads until they hold the records looked at) and tells the others. */
static int ncf__mpi_sniff(MPI_File f, int64_t size, const char *name, const ncf_dataset_opts *o, ncf__dialect *D,
                          ncf_load_report *rep, MPI_Comm comm)
{
    int rank, rc = ncf__dialect_of(name, o, D);
    MPI_Comm_rank(comm, &rank);
    if (rc == NCF_OK && o->events) /* (each rank would meet the kinds in its own order) */
        rc = ncf__fail(NCF_ERR_ARG, "%s: an events list is read by ncf_load_dataset, not ncf_mpi_load_dataset", name);
    if (rc == NCF_OK && rank == 0) {
        int64_t len = size < 65536 ? size : 65536;
        char *buf = NULL;
        for (;;) {
            const char *p;
            if (!(buf = NCF__NEW(char, len + 1))) rc = ncf__fail(NCF_ERR_NOMEM, "%s: out of memory", name);
            else if (!ncf__mpi_read_at(f, 0, buf, len)) rc = ncf__fail(NCF_ERR_IO, "%s: cannot read", name);
            if (rc != NCF_OK) break;
            p = buf + ncf__bom_bytes(buf, (size_t)len);
            if (len == size || ncf__sniff_enough(p, buf + len, D->sep)) {
                rc = ncf__sniff(name, p, buf + len, o, D, rep);
                break;
            }
            NCF_FREE(buf);
            len = 2 * len < size ? 2 * len : size;
        }
        NCF_FREE(buf);
        if (rc == NCF_OK && o->min_rating > -HUGE_VALF && D->col[2] < 0)
            rc = ncf__fail(NCF_ERR_ARG, "%s: min_rating needs a rating column, and the file has none", name);
        if (rc == NCF_OK && o->weighting != NCF_WEIGHT_NONE && D->col[NCF_COL_STRENGTH] < 0)
            rc = ncf__fail(NCF_ERR_ARG, "%s: a weighting needs a strength column, and the file has none", name);
    }
    if ((rc = ncf__mpi_agree(comm, rc)) != NCF_OK) return rc;
    if (MPI_Bcast(D, (int)sizeof *D, MPI_BYTE, 0, comm) != MPI_SUCCESS ||
        MPI_Bcast(rep, (int)sizeof *rep, MPI_BYTE, 0, comm) != MPI_SUCCESS)
        return ncf__fail(NCF_ERR_IO, "%s: MPI_Bcast of the dialect failed", name);
    return NCF_OK;
}

/* This rank's lines of the file: its byte range [*at, *at + *len) cut at line ends, read into
   *buf, and the number of the range's first line. */
static int ncf__mpi_read_range(MPI_File f, int64_t size, const char *name, MPI_Comm comm, char **buf, int64_t *len,
                               int64_t *line0)
{
    int rank, P, rc = NCF_OK;
    int64_t start = 0, *starts = NULL, ends = 0, before = 0;
    MPI_Comm_rank(comm, &rank), MPI_Comm_size(comm, &P);
    *buf = NULL;
    if (rank > 0) {
        int64_t s = (int64_t)((double)size * rank / P); /* (a cut is any byte: only its line end matters) */
        if (!ncf__mpi_line_start(f, size, s > 0 ? s : 1, &start)) rc = ncf__fail(NCF_ERR_IO, "%s: cannot read", name);
    }
    if (!(starts = NCF__NEW(int64_t, (size_t)P + 1))) rc = ncf__fail(NCF_ERR_NOMEM, "%s: out of memory", name);
    if ((rc = ncf__mpi_agree(comm, rc)) != NCF_OK) {
        NCF_FREE(starts);
        return rc;
    }
    if (MPI_Allgather(&start, 1, MPI_INT64_T, starts, 1, MPI_INT64_T, comm) != MPI_SUCCESS)
        rc = ncf__fail(NCF_ERR_IO, "%s: MPI_Allgather failed", name);
    starts[P] = size;
    *len = rc == NCF_OK ? starts[rank + 1] - start : 0;
    NCF_FREE(starts);
    if (rc == NCF_OK && !(*buf = NCF__NEW(char, *len + 1)))
        rc = ncf__fail(NCF_ERR_NOMEM, "%s: out of memory for %lld bytes of it", name, (long long)*len);
    if (rc == NCF_OK && !ncf__mpi_read_at(f, start, *buf, *len)) rc = ncf__fail(NCF_ERR_IO, "%s: cannot read", name);
    if (rc == NCF_OK) ends = ncf__max_records(*buf, *buf + *len) - 1;
    if (MPI_Exscan(&ends, &before, 1, MPI_INT64_T, MPI_SUM, comm) != MPI_SUCCESS)
        rc = ncf__fail(NCF_ERR_IO, "%s: MPI_Exscan failed", name);
    *line0 = 1 + (rank > 0 ? before : 0);
    if ((rc = ncf__mpi_agree(comm, rc)) != NCF_OK) NCF__DROP(*buf);
    return rc;
}

/* This rank's records: its lines parsed in the shared dialect (a column any rank reads as text
   is text on every rank), their record numbers the file's when it has no timestamps. */
static int ncf__mpi_parse(const char *name, const char *buf, int64_t len, int64_t line0, const ncf_dataset_opts *o,
                          ncf__parsed *R, MPI_Comm comm)
{
    const char *p = buf + (line0 == 1 ? ncf__bom_bytes(buf, (size_t)len) : 0), *end = buf + len;
    int text[2], rc, c;
    int64_t j, before = 0;
    rc = ncf__triples_reserve(&R->tr, ncf__max_records(p, end), o->min_rating > -HUGE_VALF,
                              o->weighting != NCF_WEIGHT_NONE);
    if (rc == NCF_OK) rc = ncf__read_records(name, p, end, &R->D, o->min_rating, &R->tr, R->in, line0);
    if ((rc = ncf__mpi_agree(comm, rc)) != NCF_OK) return rc;
    if (MPI_Allreduce(R->D.text, text, 2, MPI_INT, MPI_MAX, comm) != MPI_SUCCESS)
        rc = ncf__fail(NCF_ERR_IO, "%s: MPI_Allreduce failed", name);
    if (rc == NCF_OK && (text[0] != R->D.text[0] || text[1] != R->D.text[1])) {
        R->D.text[0] = text[0], R->D.text[1] = text[1];
        rc = ncf__read_records(name, p, end, &R->D, o->min_rating, &R->tr, R->in, line0);
    }
    if (MPI_Exscan(&R->tr.n, &before, 1, MPI_INT64_T, MPI_SUM, comm) != MPI_SUCCESS)
        rc = ncf__fail(NCF_ERR_IO, "%s: MPI_Exscan failed", name);
    if (line0 == 1) before = 0; /* (rank 0's is undefined) */
    if (R->D.col[3] < 0)
        for (j = 0; j < R->tr.n; j++) R->tr.t[j] += before;
    for (c = 0; c < 2; c++) R->rep.blank_edged_ids[c] = R->D.edged[c];
    R->rep.nonpositive_ratings = R->D.nonpositive;
    if (MPI_Allreduce(MPI_IN_PLACE, R->rep.blank_edged_ids, 2, MPI_INT64_T, MPI_SUM, comm) != MPI_SUCCESS ||
        MPI_Allreduce(MPI_IN_PLACE, &R->rep.nonpositive_ratings, 1, MPI_INT64_T, MPI_SUM, comm) != MPI_SUCCESS)
        rc = ncf__fail(NCF_ERR_IO, "%s: MPI_Allreduce failed", name);
    return ncf__mpi_agree(comm, rc);
}

/* Gathers every rank's n values of size bytes into *all (allocated; *total of them), when
   every rank's rc is NCF_OK. */
static int ncf__mpi_gather_all(MPI_Comm comm, int rc, const void *v, int64_t n, size_t size, void **all, int64_t *total)
{
    int P, q, mine = n > INT32_MAX / (int)size ? -1 : (int)(n * (int64_t)size), *cnt, *at;
    int64_t sum = 0;
    MPI_Comm_size(comm, &P);
    *all = NULL, *total = 0;
    cnt = NCF__NEW(int, P), at = NCF__NEW(int, P);
    if (rc == NCF_OK && (!cnt || !at)) rc = ncf__fail(NCF_ERR_NOMEM, "out of memory gathering ids");
    if ((rc = ncf__mpi_agree(comm, rc)) != NCF_OK || MPI_Allgather(&mine, 1, MPI_INT, cnt, 1, MPI_INT, comm)) {
        NCF_FREE(cnt), NCF_FREE(at);
        return rc != NCF_OK ? rc : ncf__fail(NCF_ERR_IO, "MPI_Allgather failed");
    }
    for (q = 0; q < P; q++) {
        if (cnt[q] < 0 || sum + cnt[q] > INT32_MAX) rc = ncf__fail(NCF_ERR_DATA, "more than 2 GB of ids to gather");
        at[q] = (int)sum, sum += cnt[q] < 0 ? 0 : cnt[q];
    }
    if (rc == NCF_OK && !(*all = NCF_MALLOC((size_t)sum + 1)))
        rc = ncf__fail(NCF_ERR_NOMEM, "out of memory gathering %lld bytes of ids", (long long)sum);
    if ((rc = ncf__mpi_agree(comm, rc)) == NCF_OK &&
        MPI_Allgatherv(v, mine, MPI_BYTE, *all, cnt, at, MPI_BYTE, comm) != MPI_SUCCESS)
        rc = ncf__fail(NCF_ERR_IO, "MPI_Allgatherv failed");
    NCF_FREE(cnt), NCF_FREE(at);
    if (rc != NCF_OK) NCF__DROP(*all);
    *total = rc == NCF_OK ? (int64_t)(sum / (int64_t)size) : 0;
    return rc;
}

/* An integer column's ids over the ranks: *raw the union of every rank's, ascending (*count of
   them), and v[n] each turned to its place in it. */
static int ncf__mpi_int_ids(MPI_Comm comm, int64_t *v, int64_t n, int64_t **raw, int *count)
{
    int64_t *mine = NCF__NEW(int64_t, n + 1), k = 0, j;
    void *all = NULL;
    int rc = mine ? NCF_OK : ncf__fail(NCF_ERR_NOMEM, "out of memory for %lld ids", (long long)n);
    if (mine && n > 0) memcpy(mine, v, sizeof *mine * (size_t)n), k = ncf__sort_unique_i64(mine, n);
    rc = ncf__mpi_gather_all(comm, rc, mine, k, sizeof *mine, &all, &k);
    NCF_FREE(mine);
    if (rc != NCF_OK) return rc;
    k = ncf__sort_unique_i64((int64_t *)all, k);
    if (k > INT32_MAX) rc = ncf__fail(NCF_ERR_DATA, "more than 2^31 distinct ids");
    for (j = 0; rc == NCF_OK && j < n; j++) v[j] = ncf__find_id((const int64_t *)all, NULL, (int)k, v[j]);
    *raw = (int64_t *)all, *count = (int)k;
    return ncf__mpi_agree(comm, rc);
}

/* A text column's ids over the ranks: the union of every rank's, in byte order (*text, *at,
   *count of them), and v[n] (numbers in in) each turned to its place in it. */
static int ncf__mpi_text_ids(MPI_Comm comm, int64_t *v, int64_t n, const ncf__intern *in, char **text, int64_t **at,
                             int *count)
{
    char *lt = NULL, *gt = NULL;
    int64_t *lat = NULL, *lrank = NULL, *len = NULL, *glen = NULL, nb = 0, ng = 0, k, j, K = 0;
    ncf__idkey *key = NULL;
    int rc = ncf__intern_sort(in, &lt, &lat, &lrank);
    *text = NULL, *at = NULL, *count = 0;
    if (rc == NCF_OK && !(len = NCF__NEW(int64_t, in->n + 1))) rc = ncf__fail(NCF_ERR_NOMEM, "out of memory");
    for (k = 0; rc == NCF_OK && k < in->n; k++) len[k] = lat[k + 1] - lat[k];
    if ((rc = ncf__mpi_gather_all(comm, rc, len, in->n, sizeof *len, (void **)&glen, &ng)) == NCF_OK)
        rc = ncf__mpi_gather_all(comm, rc, lt, lat[in->n], 1, (void **)&gt, &nb);
    if (rc == NCF_OK && !(key = NCF__NEW(ncf__idkey, ng + 1))) rc = ncf__fail(NCF_ERR_NOMEM, "out of memory");
    if (rc == NCF_OK) {
        int64_t off = 0;
        for (k = 0; k < ng; k++) key[k].p = gt + off, key[k].len = glen[k], off += glen[k];
        ncf__sort(key, (size_t)ng, sizeof *key, ncf__cmp_idkey_text);
        for (k = 0; k < ng; k++)
            if (K == 0 || ncf__cmp_text(key[K - 1].p, (size_t)key[K - 1].len, key[k].p, (size_t)key[k].len))
                key[K++] = key[k];
        if (K > INT32_MAX) rc = ncf__fail(NCF_ERR_DATA, "more than 2^31 distinct ids");
        else if (!(*text = NCF__NEW(char, nb + 1)) || !(*at = NCF__NEW(int64_t, K + 1)))
            rc = ncf__fail(NCF_ERR_NOMEM, "out of memory for %lld text ids", (long long)K);
    }
    if (rc == NCF_OK) {
        for ((*at)[0] = 0, k = 0; k < K; k++) {
            memcpy(*text + (*at)[k], key[k].p, (size_t)key[k].len);
            (*at)[k + 1] = (*at)[k] + key[k].len;
        }
        for (k = 0; k < in->n; k++) { /* each local id's place: lrank[k] is its local one */
            const char *s = lt + lat[k];
            size_t sl = (size_t)(lat[k + 1] - lat[k]);
            int64_t lo;
            NCF__FIRST_NOT(int64_t, lo, K,
                           ncf__cmp_text(*text + (*at)[mid], (size_t)((*at)[mid + 1] - (*at)[mid]), s, sl) < 0);
            len[k] = lo;
        }
        for (j = 0; j < n; j++) v[j] = len[lrank[v[j]]];
        *count = (int)K;
    }
    NCF_FREE(lt), NCF_FREE(lat), NCF_FREE(lrank), NCF_FREE(len), NCF_FREE(glen), NCF_FREE(gt), NCF_FREE(key);
    if (rc != NCF_OK) NCF__DROP(*text), NCF__DROP(*at);
    return ncf__mpi_agree(comm, rc);
}

/* This rank's lines once routed: each array's n values, in file order, for users [lo, hi). */
typedef struct {
    int64_t n, *t;
    int32_t *u, *i;
    double *s;    /* strengths (a weighting), else NULL */
    uint8_t *pos; /* whether each is a positive (min_rating), else NULL */
} ncf__mpi_lines;

static void ncf__mpi_lines_free(ncf__mpi_lines *L)
{
    NCF_FREE(L->t), NCF_FREE(L->u), NCF_FREE(L->i), NCF_FREE(L->s), NCF_FREE(L->pos);
    memset(L, 0, sizeof *L);
}

/* One column of the lines sent to their ranks (dest[j]), as sc/sa say, into *out (rcnt/ra, nr
   values); src is freed once packed, so a column is held at most twice at once. */
static int ncf__mpi_route_column(MPI_Comm comm, void **src, size_t size, int64_t n, const uint8_t *dest, const int *sc,
                                 const int *sa, const int *rcnt, const int *ra, int64_t nr, void **out)
{
    int P, q, rc = NCF_OK, *fill;
    char *send = NULL;
    int64_t j;
    MPI_Datatype T;
    MPI_Comm_size(comm, &P);
    fill = NCF__NEW(int, P), send = (char *)NCF_MALLOC(size * (size_t)(n + 1));
    *out = NCF_MALLOC(size * (size_t)(nr + 1));
    if (!fill || !send || !*out) rc = ncf__fail(NCF_ERR_NOMEM, "out of memory for %lld lines", (long long)(n + nr));
    for (q = 0; rc == NCF_OK && q < P; q++) fill[q] = sa[q];
    for (j = 0; rc == NCF_OK && j < n; j++)
        memcpy(send + size * (size_t)fill[dest[j]]++, (char *)*src + size * (size_t)j, size);
    NCF__DROP(*src);
    if ((rc = ncf__mpi_agree(comm, rc)) == NCF_OK) {
        MPI_Type_contiguous((int)size, MPI_BYTE, &T);
        MPI_Type_commit(&T);
        if (MPI_Alltoallv(send, sc, sa, T, *out, rcnt, ra, T, comm) != MPI_SUCCESS)
            rc = ncf__fail(NCF_ERR_IO, "MPI_Alltoallv of the lines failed");
        MPI_Type_free(&T);
    }
    NCF_FREE(fill), NCF_FREE(send);
    if (rc != NCF_OK) NCF__DROP(*out);
    return rc;
}

/* Sends each of R's lines to the rank of its user (users cut in P runs of about 1/P of the
   lines each, ranks in order), R's records freed as they go: *L gets this rank's users' lines
   in file order, users [*lo, *hi). */
static int ncf__mpi_route_lines(MPI_Comm comm, ncf__parsed *R, int U0, ncf__mpi_lines *L, int *lo, int *hi)
{
    int P, rank, q, rc = NCF_OK, *cut = NULL, *sc = NULL, *sa = NULL, *rcnt = NULL, *ra = NULL, u;
    int64_t *cnt = NCF__ZNEW(int64_t, (size_t)U0 + 1), j, total = 0, acc = 0, nr = 0, n = R->tr.n;
    uint8_t *dest = NULL;
    int32_t *v32[2] = {NULL, NULL};
    MPI_Comm_size(comm, &P), MPI_Comm_rank(comm, &rank);
    memset(L, 0, sizeof *L);
    cut = NCF__NEW(int, P + 1), sc = NCF__ZNEW(int, P), sa = NCF__NEW(int, P), rcnt = NCF__NEW(int, P);
    ra = NCF__NEW(int, P), dest = NCF__NEW(uint8_t, n + 1);
    v32[0] = NCF__NEW(int32_t, n + 1), v32[1] = NCF__NEW(int32_t, n + 1);
    if (!cnt || !cut || !sc || !sa || !rcnt || !ra || !dest || !v32[0] || !v32[1])
        rc = ncf__fail(NCF_ERR_NOMEM, "out of memory for %lld lines", (long long)n);
    for (j = 0; rc == NCF_OK && j < n; j++) cnt[R->tr.u[j]]++;
    if ((rc = ncf__mpi_agree(comm, rc)) == NCF_OK) rc = ncf__mpi_reduce(&comm, cnt, U0, NCF__SUM_I64);
    if (rc != NCF_OK) goto done;
    for (u = 0; u < U0; u++) total += cnt[u];
    for (q = 0, u = 0; q <= P; q++) { /* run q begins at the first user whose lines start past q/P */
        while (q > 0 && q < P && u < U0 && acc + cnt[u] <= (int64_t)((double)total * q / P)) acc += cnt[u++];
        cut[q] = q == 0 ? 0 : q == P ? U0 : u;
    }
    for (j = 0; j < n; j++) {
        int d = 0;
        while (R->tr.u[j] >= cut[d + 1]) d++;
        dest[j] = (uint8_t)d, sc[d]++;
        v32[0][j] = (int32_t)R->tr.u[j], v32[1][j] = (int32_t)R->tr.i[j];
    }
    NCF__DROP(R->tr.u), NCF__DROP(R->tr.i);
    for (q = 0, sa[0] = 0; q + 1 < P; q++) sa[q + 1] = sa[q] + sc[q];
    if (MPI_Alltoall(sc, 1, MPI_INT, rcnt, 1, MPI_INT, comm) != MPI_SUCCESS)
        rc = ncf__fail(NCF_ERR_IO, "MPI_Alltoall failed");
    for (q = 0; rc == NCF_OK && q < P; q++) ra[q] = (int)nr, nr += rcnt[q];
    if (nr > INT32_MAX) rc = ncf__fail(NCF_ERR_DATA, "more than 2^31 lines for one rank: use more ranks");
    *lo = cut[rank], *hi = cut[rank + 1];
    if ((rc = ncf__mpi_agree(comm, rc)) != NCF_OK) goto done;
    rc = ncf__mpi_route_column(comm, (void **)&v32[0], 4, n, dest, sc, sa, rcnt, ra, nr, (void **)&L->u);
    if (rc == NCF_OK)
        rc = ncf__mpi_route_column(comm, (void **)&v32[1], 4, n, dest, sc, sa, rcnt, ra, nr, (void **)&L->i);
    if (rc == NCF_OK)
        rc = ncf__mpi_route_column(comm, (void **)&R->tr.t, 8, n, dest, sc, sa, rcnt, ra, nr, (void **)&L->t);
    if (rc == NCF_OK && R->tr.str)
        rc = ncf__mpi_route_column(comm, (void **)&R->tr.str, 8, n, dest, sc, sa, rcnt, ra, nr, (void **)&L->s);
    if (rc == NCF_OK && R->tr.pos)
        rc = ncf__mpi_route_column(comm, (void **)&R->tr.pos, 1, n, dest, sc, sa, rcnt, ra, nr, (void **)&L->pos);
    L->n = nr;
done:
    NCF_FREE(cnt), NCF_FREE(cut), NCF_FREE(sc), NCF_FREE(sa), NCF_FREE(rcnt), NCF_FREE(ra), NCF_FREE(dest);
    NCF_FREE(v32[0]), NCF_FREE(v32[1]);
    if (rc != NCF_OK) ncf__mpi_lines_free(L);
    return rc;
}

/* This rank's users [*lo, *hi) once the filters renumbered the users kept: those of its lines
   kept (every user kept has one), counted across the ranks in order. */
static int ncf__mpi_kept_run(const ncf__building *b, int64_t n, int *lo, int *hi, MPI_Comm comm)
{
    int64_t j, least = INT32_MAX, most = -1, mine, before = 0;
    int rank;
    MPI_Comm_rank(comm, &rank);
    for (j = 0; j < n; j++)
        if (b->du[j] >= 0) least = b->du[j] < least ? b->du[j] : least, most = b->du[j] > most ? b->du[j] : most;
    mine = most >= 0 ? most - least + 1 : 0;
    if (MPI_Exscan(&mine, &before, 1, MPI_INT64_T, MPI_SUM, comm) != MPI_SUCCESS)
        return ncf__fail(NCF_ERR_IO, "MPI_Exscan failed");
    if (rank == 0) before = 0;
    *lo = (int)before, *hi = (int)(before + mine);
    return NCF_OK;
}

/* The one-process build on this rank's lines (in, of users [*plo, *phi) as read, then as kept):
   a dataset of every user, the others empty, with eval negatives and validation for its own
   (rows from *plo). */
static int ncf__mpi_build(ncf_dataset *ds, const char *name, const ncf_dataset_opts *o, ncf__parsed *R,
                          ncf__mpi_lines *L, int64_t *raw_u, int U0, int64_t *raw_i, int I0, int *plo, int *phi,
                          MPI_Comm comm)
{
    ncf__building b;
    ncf__build_opts bo;
    ncf_load_report rep;
    int64_t n = L->n, all = 0;
    double w[2];
    int rc;
    memset(&b, 0, sizeof b), memset(&bo, 0, sizeof bo), memset(ds, 0, sizeof *ds);
    b.du = L->u, b.di = L->i, b.raw_u = raw_u, b.raw_i = raw_i, L->u = L->i = NULL; /* (the build's now) */
    bo.positive = L->pos, bo.min_ratings = o->min_ratings, bo.seed = o->seed, bo.report = &R->rep;
    bo.min_item_ratings = o->min_item_ratings, bo.kcore = o->kcore;
    bo.strength = L->s, bo.weighting = o->weighting, bo.alpha = o->alpha;
    bo.holdout = o->holdout != NCF_HOLDOUT_AUTO ? o->holdout
        : R->D.col[3] >= 0                      ? NCF_HOLDOUT_LATEST
                                                : NCF_HOLDOUT_RANDOM;
    bo.reduce = ncf__mpi_reduce, bo.ctx = &comm;
    memset(&rep, 0, sizeof rep);
    R->rep.text_ids[0] = R->D.text[0], R->rep.text_ids[1] = R->D.text[1];
    if ((rc = ncf__build_filter(&b, n, U0, I0, &bo, &rep)) == NCF_OK &&
        (rc = ncf__mpi_kept_run(&b, n, plo, phi, comm)) == NCF_OK)
        rc = ncf__mpi_agree(comm, ncf__build_rest(ds, &b, R->D.col[3] >= 0 ? L->t : NULL, n, &bo, &rep));
    if (rc != NCF_OK) rc = ncf__prefix_error(rc, name);
    ncf__mpi_lines_free(L);
    ncf__building_free(&b);
    if (rc != NCF_OK) return rc;
    /* what each rank counted of its own lines: duplicates, and the confidences' range */
    w[0] = ds->num_train ? -ds->report.weight_min : -HUGE_VAL, w[1] = ds->num_train ? ds->report.weight_max : -HUGE_VAL;
    if (MPI_Allreduce(MPI_IN_PLACE, &ds->report.duplicates, 1, MPI_INT64_T, MPI_SUM, comm) != MPI_SUCCESS ||
        MPI_Allreduce(MPI_IN_PLACE, w, 2, MPI_DOUBLE, MPI_MAX, comm) != MPI_SUCCESS ||
        MPI_Allreduce(&ds->num_train, &all, 1, MPI_INT64_T, MPI_SUM, comm) != MPI_SUCCESS)
        rc = ncf__fail(NCF_ERR_IO, "%s: MPI_Allreduce failed", name);
    if (o->weighting != NCF_WEIGHT_NONE)
        ds->report.weight_min = all ? -w[0] : 0, ds->report.weight_max = all ? w[1] : 0;
    if (rc == NCF_OK && ds->report.holdout != NCF_HOLDOUT_NONE)
        rc = ncf__eval_negatives(ds, o->eval_negatives ? o->eval_negatives : 99, o->seed, *plo, *phi);
    if ((rc = ncf__mpi_agree(comm, rc)) == NCF_OK && o->validation) {
        if (ds->report.holdout == NCF_HOLDOUT_NONE)
            rc = ncf__fail(NCF_ERR_ARG, "validation needs a hold-out (holdout none trains on everything)");
        else rc = ncf__hold_out_val(ds, ds->num_eval_neg, o->seed, *plo, *phi);
        if ((rc = ncf__mpi_agree(comm, rc)) != NCF_OK) rc = ncf__prefix_error(rc, name);
    } else if (rc != NCF_OK) rc = ncf__prefix_error(rc, name);
    if (rc != NCF_OK) ncf_dataset_free(ds);
    return rc;
}

/* Words of user u's record as it moves to its final rank: u, its positives, test and validation
   items, then its items, their weights' bits, its eval and validation negatives. */
static int64_t ncf__mpi_user_words(const ncf_dataset *d, int u)
{
    int64_t c = d->user_ptr[u + 1] - d->user_ptr[u];
    return 4 + c * (d->weight ? 2 : 1) + (d->test_item[u] >= 0 ? d->num_eval_neg : 0) +
        (d->val_item && d->val_item[u] >= 0 ? d->num_val_neg : 0);
}

/* Moves the users of d (built on this rank for users [plo, phi)) to the ranks ncf_mpi_shard
   gives them, into out: that shard of the whole data, as ncf_mpi_shard leaves it. */
static int ncf__mpi_deal_users(ncf_dataset *d, int plo, int phi, ncf_dataset *out, MPI_Comm comm)
{
    int P, rank, q, u, rc = NCF_OK, U = d->num_users, G = NCF_MPI_GROUPS, lo, hi, *groups = NULL;
    int *sc = NULL, *sa = NULL, *rcnt = NULL, *ra = NULL, ne = d->num_eval_neg, nv = d->num_val_neg;
    int64_t *whole = NCF__ZNEW(int64_t, (size_t)U + 1), words = 0, nr = 0, k, at, n, i;
    int32_t *sbuf = NULL, *rbuf = NULL;
    ncf_dataset stub;
    MPI_Comm_size(comm, &P), MPI_Comm_rank(comm, &rank);
    memset(out, 0, sizeof *out);
    sc = NCF__ZNEW(int, P), sa = NCF__NEW(int, P), rcnt = NCF__NEW(int, P), ra = NCF__NEW(int, P);
    groups = NCF__NEW(int, G + 1);
    if (!whole || !sc || !sa || !rcnt || !ra || !groups) rc = ncf__fail(NCF_ERR_NOMEM, "out of memory");
    for (u = plo; rc == NCF_OK && u < phi; u++) whole[u + 1] = d->user_ptr[u + 1] - d->user_ptr[u];
    if ((rc = ncf__mpi_agree(comm, rc)) == NCF_OK) rc = ncf__mpi_reduce(&comm, whole + 1, U, NCF__SUM_I64);
    if (rc != NCF_OK) goto done;
    for (u = 0; u < U; u++) whole[u + 1] += whole[u];
    memset(&stub, 0, sizeof stub), stub.num_users = U, stub.user_ptr = whole, stub.num_train = whole[U];
    for (q = 0; q <= G; q++) groups[q] = ncf__group_first_user(&stub, q, G);
    lo = groups[(int64_t)G * rank / P], hi = groups[(int64_t)G * (rank + 1) / P];
    for (u = plo, q = 0; u < phi; u++) { /* ranks own ascending runs of users: q only grows */
        while (u >= groups[(int64_t)G * (q + 1) / P]) q++;
        words = ncf__mpi_user_words(d, u);
        if (sc[q] + words > INT32_MAX)
            rc = ncf__fail(NCF_ERR_DATA, "more than 8 GB of users for one rank: use more ranks");
        sc[q] += (int)words;
    }
    for (q = 0, words = 0; q < P; q++) sa[q] = (int)words, words += sc[q];
    if (rc == NCF_OK && words > INT32_MAX) rc = ncf__fail(NCF_ERR_DATA, "more than 8 GB of users on one rank");
    if (rc == NCF_OK && !(sbuf = NCF__NEW(int32_t, words + 1))) rc = ncf__fail(NCF_ERR_NOMEM, "out of memory");
    for (u = plo, at = 0; rc == NCF_OK && u < phi; u++) { /* pack */
        int64_t c = d->user_ptr[u + 1] - d->user_ptr[u];
        int32_t v = d->val_item ? d->val_item[u] : -1;
        sbuf[at++] = u, sbuf[at++] = (int32_t)c, sbuf[at++] = d->test_item[u], sbuf[at++] = v;
        memcpy(sbuf + at, d->items + d->user_ptr[u], sizeof(int32_t) * (size_t)c), at += c;
        if (d->weight) memcpy(sbuf + at, d->weight + d->user_ptr[u], sizeof(float) * (size_t)c), at += c;
        if (d->test_item[u] >= 0 && ne)
            memcpy(sbuf + at, d->eval_neg + (size_t)(u - plo) * ne, sizeof(int32_t) * (size_t)ne), at += ne;
        if (v >= 0 && nv)
            memcpy(sbuf + at, d->val_neg + (size_t)(u - plo) * nv, sizeof(int32_t) * (size_t)nv), at += nv;
    }
    if ((rc = ncf__mpi_agree(comm, rc)) == NCF_OK &&
        MPI_Alltoall(sc, 1, MPI_INT, rcnt, 1, MPI_INT, comm) != MPI_SUCCESS)
        rc = ncf__fail(NCF_ERR_IO, "MPI_Alltoall failed");
    for (q = 0; rc == NCF_OK && q < P; q++) ra[q] = (int)nr, nr += rcnt[q];
    if (rc == NCF_OK && nr > INT32_MAX) rc = ncf__fail(NCF_ERR_DATA, "more than 8 GB of users for one rank");
    n = whole[hi] - whole[lo];
    out->user_ptr = NCF__NEW(int64_t, (size_t)U + 1), out->items = NCF__NEW(int32_t, n + 1);
    out->train_user = NCF__NEW(int32_t, n + 1), out->test_item = NCF__NEW(int32_t, U ? U : 1);
    if (d->weight) out->weight = NCF__NEW(float, n + 1);
    if (ne) out->eval_neg = NCF__ZNEW(int32_t, (size_t)(hi - lo) * ne + 1);
    if (d->val_item) out->val_item = NCF__NEW(int32_t, U ? U : 1);
    if (nv) out->val_neg = NCF__ZNEW(int32_t, (size_t)(hi - lo) * nv + 1);
    if (rc == NCF_OK && !(rbuf = NCF__NEW(int32_t, nr + 1))) rc = ncf__fail(NCF_ERR_NOMEM, "out of memory");
    if (rc == NCF_OK &&
        (!out->user_ptr || !out->items || !out->train_user || !out->test_item || (d->weight && !out->weight) ||
         (ne && !out->eval_neg) || (d->val_item && !out->val_item) || (nv && !out->val_neg)))
        rc = ncf__fail(NCF_ERR_NOMEM, "out of memory for %lld positives", (long long)n);
    if ((rc = ncf__mpi_agree(comm, rc)) == NCF_OK &&
        MPI_Alltoallv(sbuf, sc, sa, MPI_INT32_T, rbuf, rcnt, ra, MPI_INT32_T, comm) != MPI_SUCCESS)
        rc = ncf__fail(NCF_ERR_IO, "MPI_Alltoallv of the users failed");
    if ((rc = ncf__mpi_agree(comm, rc)) != NCF_OK) goto done;
    for (u = 0; u < U; u++) out->test_item[u] = -1;
    if (out->val_item)
        for (u = 0; u < U; u++) out->val_item[u] = -1;
    for (at = 0, k = 0; at < nr;) { /* unpack: the users arrive in order */
        int32_t c;
        u = rbuf[at], c = rbuf[at + 1], out->test_item[u] = rbuf[at + 2];
        if (out->val_item) out->val_item[u] = rbuf[at + 3];
        at += 4;
        memcpy(out->items + k, rbuf + at, sizeof(int32_t) * (size_t)c), at += c;
        if (out->weight) memcpy(out->weight + k, rbuf + at, sizeof(float) * (size_t)c), at += c;
        for (i = 0; i < c; i++) out->train_user[k + i] = u;
        k += c;
        if (out->test_item[u] >= 0 && ne)
            memcpy(out->eval_neg + (size_t)(u - lo) * ne, rbuf + at, sizeof(int32_t) * (size_t)ne), at += ne;
        if (out->val_item && out->val_item[u] >= 0 && nv)
            memcpy(out->val_neg + (size_t)(u - lo) * nv, rbuf + at, sizeof(int32_t) * (size_t)nv), at += nv;
    }
    for (u = 0; u <= U; u++) /* the other users look empty, as ncf_mpi_shard leaves them */
        out->user_ptr[u] = (whole[u] < whole[lo] ? whole[lo] : whole[u] > whole[hi] ? whole[hi] : whole[u]) - whole[lo];
    out->num_users = U, out->num_items = d->num_items, out->num_train = whole[hi] - whole[lo];
    out->num_eval_neg = ne, out->num_val_neg = nv;
    out->shard.user_lo = lo, out->shard.user_hi = hi, out->shard.train_lo = whole[lo];
    out->shard.total_train = whole[U], out->shard.groups = groups, groups = NULL;
    /* what ncf_mpi_shard keeps whole: every user's latest item and validation weight */
    if (d->recent_item && MPI_Allreduce(MPI_IN_PLACE, d->recent_item, U, MPI_INT32_T, MPI_MAX, comm) != MPI_SUCCESS)
        rc = ncf__fail(NCF_ERR_IO, "MPI_Allreduce failed");
    if (d->val_weight && MPI_Allreduce(MPI_IN_PLACE, d->val_weight, U, MPI_FLOAT, MPI_SUM, comm) != MPI_SUCCESS)
        rc = ncf__fail(NCF_ERR_IO, "MPI_Allreduce failed");
    out->recent_item = d->recent_item, d->recent_item = NULL, out->val_weight = d->val_weight, d->val_weight = NULL;
    out->raw_user = d->raw_user, d->raw_user = NULL, out->raw_item = d->raw_item, d->raw_item = NULL;
    out->report = d->report;
done:
    NCF_FREE(whole), NCF_FREE(sc), NCF_FREE(sa), NCF_FREE(rcnt), NCF_FREE(ra), NCF_FREE(groups);
    NCF_FREE(sbuf), NCF_FREE(rbuf);
    if (rc != NCF_OK) ncf_dataset_free(out);
    return rc;
}

/* The ids a column's numbers stand for in the build: integers as read, or text's places. */
static int ncf__mpi_column_ids(MPI_Comm comm, ncf__parsed *R, int c, int64_t **raw, int *count, char **text,
                               int64_t **at)
{
    int64_t *v = c ? R->tr.i : R->tr.u, k;
    int rc;
    if (!R->D.text[c]) return ncf__mpi_int_ids(comm, v, R->tr.n, raw, count);
    if ((rc = ncf__mpi_text_ids(comm, v, R->tr.n, &R->in[c], text, at, count)) != NCF_OK) return rc;
    ncf__intern_free(&R->in[c]);
    rc = (*raw = NCF__NEW(int64_t, (size_t)*count + 1)) ? NCF_OK : ncf__fail(NCF_ERR_NOMEM, "out of memory");
    for (k = 0; rc == NCF_OK && k < *count; k++) (*raw)[k] = k;
    return ncf__mpi_agree(comm, rc);
}

NCFDEF int ncf_mpi_load_dataset(ncf_dataset *ds, const char *path, const ncf_dataset_opts *opts, MPI_Comm comm)
{
    ncf_dataset_opts o = opts ? *opts : ncf_dataset_opts_default();
    MPI_File f = MPI_FILE_NULL;
    MPI_Offset size = 0;
    ncf__parsed R;
    ncf_dataset d;
    ncf__mpi_lines L;
    char prefix[4200], *buf = NULL, *text[2] = {NULL, NULL};
    int64_t len = 0, line0 = 1, *raw[2] = {NULL, NULL}, *at[2] = {NULL, NULL};
    int count[2] = {0, 0}, plo = 0, phi = 0, rc = NCF_OK, c;
    if (ds) memset(ds, 0, sizeof *ds);
    memset(&R, 0, sizeof R), memset(&d, 0, sizeof d), memset(&L, 0, sizeof L);
    if (!ds || !path) rc = ncf__fail(NCF_ERR_ARG, "ncf_mpi_load_dataset: NULL dataset or path");
    else if (strlen(path) >= sizeof prefix) rc = ncf__fail(NCF_ERR_ARG, "%s: path too long", path);
    else if (o.format == NCF_FORMAT_NCF ||
             (o.format == NCF_FORMAT_AUTO &&
              (ncf__split_prefix(path, ncf__split_suffix, prefix, sizeof prefix) ||
               ncf__split_prefix(path, ncf__saved_suffix, prefix, sizeof prefix))))
        rc = ncf__fail(NCF_ERR_ARG,
                       "%s: a split in files is read whole (ncf_load_dataset, then ncf_mpi_shard); "
                       "ncf_mpi_load_dataset reads one log",
                       path);
    else if ((int)o.format < NCF_FORMAT_AUTO || (int)o.format > NCF_FORMAT_NCF)
        rc = ncf__fail(NCF_ERR_ARG, "ncf_mpi_load_dataset: unknown format %d", (int)o.format);
    else if (NCF__MANY(o.holdout))
        rc = ncf__fail(NCF_ERR_ARG, "%s: a split of many items per user is evaluated on one process (ncf_load_dataset)",
                       path);
    if ((rc = ncf__mpi_agree(comm, rc)) != NCF_OK) return rc;
    if (MPI_File_open(comm, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &f) != MPI_SUCCESS)
        rc = ncf__fail(NCF_ERR_IO, "%s: cannot open", path), f = MPI_FILE_NULL;
    else if (MPI_File_get_size(f, &size) != MPI_SUCCESS) rc = ncf__fail(NCF_ERR_IO, "%s: cannot read its size", path);
    if ((rc = ncf__mpi_agree(comm, rc)) == NCF_OK &&
        (rc = ncf__mpi_sniff(f, (int64_t)size, path, &o, &R.D, &R.rep, comm)) == NCF_OK)
        rc = ncf__mpi_read_range(f, (int64_t)size, path, comm, &buf, &len, &line0);
    if (f != MPI_FILE_NULL) MPI_File_close(&f);
    if (rc == NCF_OK) rc = ncf__mpi_parse(path, buf, len, line0, &o, &R, comm);
    NCF_FREE(buf);      /* (the range and its records are never both held past here) */
    if (rc == NCF_OK) { /* a log of no records: the whole file's error, as one process gives it */
        int64_t all = 0;
        if (MPI_Allreduce(&R.tr.n, &all, 1, MPI_INT64_T, MPI_SUM, comm) != MPI_SUCCESS)
            rc = ncf__fail(NCF_ERR_IO, "%s: MPI_Allreduce failed", path);
        else if (all == 0) rc = ncf__fail(NCF_ERR_PARSE, "%s: no ratings in the file", path);
    }
    for (c = 0; c < 2 && rc == NCF_OK; c++) rc = ncf__mpi_column_ids(comm, &R, c, &raw[c], &count[c], &text[c], &at[c]);
    if (rc == NCF_OK) rc = ncf__mpi_route_lines(comm, &R, count[0], &L, &plo, &phi);
    ncf__triples_free(&R.tr), ncf__intern_free(&R.in[0]), ncf__intern_free(&R.in[1]);
    if (rc == NCF_OK) {
        rc = ncf__mpi_build(&d, path, &o, &R, &L, raw[0], count[0], raw[1], count[1], &plo, &phi, comm);
        raw[0] = raw[1] = NULL; /* (the build frees them) */
    }
    ncf__mpi_lines_free(&L);
    if (rc == NCF_OK) rc = ncf__mpi_deal_users(&d, plo, phi, ds, comm);
    ncf_dataset_free(&d);
    for (c = 0; c < 2 && rc == NCF_OK; c++)
        if (text[c])
            rc = c ? ncf__ids_to_text(&ds->raw_item, ds->num_items, text[c], at[c], &ds->item_text, &ds->item_text_at)
                   : ncf__ids_to_text(&ds->raw_user, ds->num_users, text[c], at[c], &ds->user_text, &ds->user_text_at);
    if ((rc = ncf__mpi_agree(comm, rc)) != NCF_OK && ds) ncf_dataset_free(ds);
    for (c = 0; c < 2; c++) NCF_FREE(raw[c]), NCF_FREE(text[c]), NCF_FREE(at[c]);
    return rc;
}

/* One rank's state for a training call. */
typedef struct {
    MPI_Comm comm;
    int rank, P, g0, g1; /* this rank's groups [g0, g1) */
    int B, D, Dn;        /* batch, floats of an item record, dense parameters */
    const int *groups;   /* [G + 1] each group's first user */
    int32_t *bu, *bi;    /* [16] a chunk of the batch as drawn */
    float *by;
    uint8_t *own;
    int u0;           /* the model's row 0 is user u0's (a model shard's first user, else 0) */
    int32_t *tu, *ti; /* [B] this rank's examples in position order */
    float *ty;
    int32_t *users, *items; /* [B] this rank's examples, by group, by position within one */
    float *labels;
    int *gstart;           /* [G + 1] where each group's examples begin among them */
    double *gloss;         /* [G] each group's summed example losses */
    float *part;           /* [g1 - g0][Dn]: each own group's dense gradient */
    float *pval;           /* [B][D]: each (item, group) partial sum of an item's gradients */
    int *pn, *pcount, *pg; /* [B]: partials of a distinct item; [B] examples and group of each partial */
    float *rbuf;           /* [Dn] a dense sum received */
    uint8_t *list[2];      /* [B] item records: each own tree node's list, sorted by item; the next level's */
    int loff[NCF_MPI_GROUPS], llen[NCF_MPI_GROUPS]; /* node a's list: list[0] + loff[a], llen[a] records */
    uint8_t *msg[2];                                /* item records: a list received; the root's */
    size_t msg_cap;
    int *counts, *displs; /* [P] */
    int64_t *bytes;
} ncf__mpi;

/* An item record: the item, its examples in the batch, then D floats. */
#define NCF__REC_HEAD 8
static size_t ncf__rec_size(const ncf__mpi *c) { return NCF__REC_HEAD + sizeof(float) * (size_t)c->D; }

static void ncf__mpi_free(ncf__mpi *c)
{
    NCF_FREE(c->bu);
    NCF_FREE(c->bi);
    NCF_FREE(c->by);
    NCF_FREE(c->own);
    NCF_FREE(c->tu);
    NCF_FREE(c->ti);
    NCF_FREE(c->ty);
    NCF_FREE(c->users);
    NCF_FREE(c->items);
    NCF_FREE(c->labels);
    NCF_FREE(c->gstart);
    NCF_FREE(c->gloss);
    NCF_FREE(c->part);
    NCF_FREE(c->pval);
    NCF_FREE(c->pn);
    NCF_FREE(c->pcount);
    NCF_FREE(c->pg);
    NCF_FREE(c->rbuf);
    NCF_FREE(c->list[0]);
    NCF_FREE(c->list[1]);
    NCF_FREE(c->msg[0]);
    NCF_FREE(c->msg[1]);
    NCF_FREE(c->counts);
    NCF_FREE(c->displs);
}

static int ncf__mpi_alloc(ncf__mpi *c, ncf_model *m, const ncf_dataset *d, MPI_Comm comm)
{
    const struct ncf__scratch *s = m->scratch;
    int t, B = m->cfg.batch_size, G = NCF_MPI_GROUPS;
    c->comm = comm, c->B = B, c->groups = d->shard.groups, c->u0 = s->mpi.user0;
    MPI_Comm_rank(comm, &c->rank), MPI_Comm_size(comm, &c->P);
    c->g0 = (int)((int64_t)G * c->rank / c->P), c->g1 = (int)((int64_t)G * (c->rank + 1) / c->P);
    for (c->D = 0, t = 0; t < s->tables.n; t++) c->D += s->tables.tab[t].D;
    c->Dn = (int)(m->num_params - s->emb_params);
    c->bu = NCF__NEW(int32_t, 16), c->bi = NCF__NEW(int32_t, 16), c->by = NCF__NEW(float, 16),
    c->own = NCF__NEW(uint8_t, 16);
    c->users = NCF__NEW(int32_t, B), c->items = NCF__NEW(int32_t, B), c->labels = NCF__NEW(float, B);
    c->tu = NCF__NEW(int32_t, B), c->ti = NCF__NEW(int32_t, B), c->ty = NCF__NEW(float, B);
    c->gstart = NCF__NEW(int, G + 1), c->gloss = NCF__NEW(double, G);
    c->part = NCF__NEW(float, (size_t)(c->g1 - c->g0) * c->Dn + 1);
    c->pval = NCF__NEW(float, (size_t)B * c->D), c->pn = NCF__NEW(int, B), c->pcount = NCF__NEW(int, B);
    c->pg = NCF__NEW(int, B), c->rbuf = NCF__NEW(float, (size_t)c->Dn + 1);
    c->msg_cap = (size_t)B * ncf__rec_size(c);
    c->msg[0] = NCF__NEW(uint8_t, c->msg_cap), c->msg[1] = NCF__NEW(uint8_t, c->msg_cap);
    c->list[0] = NCF__NEW(uint8_t, c->msg_cap), c->list[1] = NCF__NEW(uint8_t, c->msg_cap);
    c->counts = NCF__NEW(int, c->P), c->displs = NCF__NEW(int, c->P);
    c->bytes = &m->scratch->mpi.bytes;
    if (!c->bu || !c->bi || !c->by || !c->own || !c->tu || !c->ti || !c->ty || !c->users || !c->items || !c->labels ||
        !c->gstart || !c->gloss || !c->part || !c->pval || !c->pn || !c->pcount || !c->pg || !c->rbuf || !c->list[0] ||
        !c->list[1] || !c->msg[0] || !c->msg[1] || !c->counts || !c->displs)
        return ncf__fail(NCF_ERR_NOMEM, "ncf_mpi_train_epoch: out of memory for a batch of %d", B);
    return NCF_OK;
}

/* The group of user u, one of this rank's. */
static int ncf__group_of(const ncf__mpi *c, int32_t u)
{
    int g = c->g0;
    while (g + 1 < c->g1 && u >= c->groups[g + 1]) g++;
    return g;
}

/* 1. This rank's examples of the batch (examples start.. of the epoch), ordered by group and
   by position within one (a stable counting sort), users as the model's rows. Returns how many. */
static int ncf__mpi_batch(ncf__mpi *c, const ncf_sampler *smp, int epoch, int64_t start, int n)
{
    int j, q, g, G = NCF_MPI_GROUPS, k = 0, next[NCF_MPI_GROUPS];
    for (j = 0; j < n; j += 16) { /* this rank's, in position order */
        int len = n - j < 16 ? n - j : 16;
        ncf__fill_rows(smp, epoch, start + j, len, c->bu, c->bi, c->by, c->own);
        for (q = 0; q < len; q++)
            if (c->own[q]) c->tu[k] = c->bu[q], c->ti[k] = c->bi[q], c->ty[k++] = c->by[q];
    }
    for (g = 0; g <= G; g++) c->gstart[g] = 0;
    for (j = 0; j < k; j++) c->gstart[ncf__group_of(c, c->tu[j]) + 1]++;
    for (g = 0; g < G; g++) c->gstart[g + 1] += c->gstart[g], next[g] = c->gstart[g];
    for (j = 0; j < k; j++) {
        int at = next[ncf__group_of(c, c->tu[j])]++;
        c->users[at] = c->tu[j] - c->u0, c->items[at] = c->ti[j], c->labels[at] = c->ty[j];
    }
    return k;
}

/* The (item, group) partial sums of distinct item q of this rank's examples: partial j at
   [istart[q] + j], each summed from zero over the group's examples in order. */
static void ncf__item_partials(ncf__mpi *c, ncf_model *m, int n, int q)
{
    struct ncf__scratch *s = m->scratch;
    const float *src[3];
    float coef, *v = NULL;
    int ld[3], t, b, d, np = 0, g = -1, off;
    for (t = 0; t < s->tables.n; t++) src[t] = ncf__row_source(m, t, 1, &ld[t], &coef, n);
    for (b = s->batch.istart[q]; b < s->batch.istart[q + 1]; b++) {
        int row = (int)(s->batch.ikey[b] & 0xffffffffu);
        if (g < 0 || row >= c->gstart[g + 1]) { /* a new group: a new partial */
            if (g < 0) g = c->g0;
            while (row >= c->gstart[g + 1]) g++;
            v = c->pval + (size_t)(s->batch.istart[q] + np) * c->D;
            memset(v, 0, sizeof(float) * (size_t)c->D);
            c->pg[s->batch.istart[q] + np] = g;
            c->pcount[s->batch.istart[q] + np++] = 0;
        }
        c->pcount[s->batch.istart[q] + np - 1]++;
        for (off = 0, t = 0; t < s->tables.n; off += s->tables.tab[t++].D) {
            const float *x = src[t] + (size_t)row * ld[t];
            for (d = 0; d < s->tables.tab[t].D; d++) v[off + d] += x[d];
        }
    }
    c->pn[q] = np;
}

/* 1b. This rank's nl examples forward and backward, its groups' dense gradients, its examples
   grouped by user and by item, and the items' partial sums: phases of one parallel region. */
static void ncf__mpi_compute(ncf__mpi *c, ncf_model *m, const ncf__batch *bt, int nl)
{
    struct ncf__scratch *s = m->scratch;
    ncf__team team = NCF__TEAM_INIT;
    int64_t du = ncf__layer_grads_count(m);
    int g, b;
    memset(c->part, 0, sizeof(float) * (size_t)(c->g1 - c->g0) * c->Dn);
    NCF__PARALLEL(ncf__rows_parallel(m, nl))
    {
        ncf__ctx x = ncf__join(&team);
        int64_t lo, hi, u;
        ncf__rows_range(&x, m, bt, 0, nl, 1);
        while (ncf__claim(&x, 2 + (c->g1 - c->g0) * du, 1, &lo, &hi))
            for (u = lo; u < hi; u++) {
                if (u == 0)
                    s->batch.nuser =
                        ncf__sort_batch_by_row(s->batch.ukey, s->batch.sortbuf, s->batch.ustart, bt->users, nl);
                else if (u == 1)
                    s->batch.nitem =
                        ncf__sort_batch_by_row(s->batch.ikey, s->batch.sortbuf + bt->n, s->batch.istart, bt->items, nl);
                else {
                    int k = (int)((u - 2) / du);
                    ncf__layer_grads_of(m, c->gstart[c->g0 + k], c->gstart[c->g0 + k + 1], (u - 2) % du,
                                        c->part + (size_t)k * c->Dn, 0);
                }
            }
        while (ncf__claim(&x, s->batch.nitem, 8, &lo, &hi))
            for (u = lo; u < hi; u++) ncf__item_partials(c, m, bt->n, (int)u);
    }
    for (g = c->g0; g < c->g1; g++) /* each group's loss, summed in order */
        for (c->gloss[g] = 0, b = c->gstart[g]; b < c->gstart[g + 1]; b++) c->gloss[g] += s->batch.ex_loss[b];
}

/* The rank holding group g: the r with G*r/P <= g < G*(r+1)/P. */
static int ncf__group_rank(const ncf__mpi *c, int g)
{
    int r = 0;
    while ((int64_t)NCF_MPI_GROUPS * (r + 1) / c->P <= g) r++;
    return r;
}

/* Level l of the fold tree pairs node a (a multiple of 2^(l+1): groups [a, a + 2^l)) with node
   b = a + 2^l, the sum of a pair being left + right; a node's sum lives on the rank of its
   first group. The pair's ranks: *left, and *right (-1 when b is past the last group). */
static void ncf__fold_pair(const ncf__mpi *c, int a, int step, int *left, int *right)
{
    *left = ncf__group_rank(c, a);
    *right = a + step < NCF_MPI_GROUPS ? ncf__group_rank(c, a + step) : -1;
}

/* 2a. The dense gradient: the groups' sums folded as a fixed binary tree over the groups (pairs,
   then pairs of pairs, ...), a right child that lives on another rank sent to its left one's,
   so a rank waits on at most log2(G) messages in turn whatever P; rank 0's root to all. Into
   m->grads, with the layers' L2 terms. */
static int ncf__mpi_dense(ncf__mpi *c, ncf_model *m)
{
    float *g = m->grads + m->scratch->emb_params, *into;
    int a, l, step, left, right, nrq;
    size_t i, Dn = (size_t)c->Dn;
    MPI_Request rq[2];
    for (l = 0, step = 1; step < NCF_MPI_GROUPS; l++, step *= 2) {
        into = NULL, nrq = 0;
        for (a = 0; a < NCF_MPI_GROUPS; a += 2 * step) {
            ncf__fold_pair(c, a, step, &left, &right);
            if (left == c->rank && right == c->rank) {
                float *pa = c->part + (size_t)(a - c->g0) * Dn, *pb = pa + (size_t)step * Dn;
                for (i = 0; i < Dn; i++) pa[i] += pb[i];
            } else if (left == c->rank && right >= 0) {
                if (MPI_Irecv(c->rbuf, c->Dn, MPI_FLOAT, right, NCF__MPI_TAG_DENSE + l, c->comm, &rq[nrq++]) !=
                    MPI_SUCCESS)
                    return 0;
                into = c->part + (size_t)(a - c->g0) * Dn;
            } else if (right == c->rank) {
                if (MPI_Isend(c->part + (size_t)(a + step - c->g0) * Dn, c->Dn, MPI_FLOAT, left, NCF__MPI_TAG_DENSE + l,
                              c->comm, &rq[nrq++]) != MPI_SUCCESS)
                    return 0;
                *c->bytes += (int64_t)4 * c->Dn;
            }
        }
        if (nrq && MPI_Waitall(nrq, rq, MPI_STATUSES_IGNORE) != MPI_SUCCESS) return 0;
        if (into)
            for (i = 0; i < Dn; i++) into[i] += c->rbuf[i];
    }
    if (c->rank == 0) memcpy(g, c->part, sizeof(float) * Dn);
    if (MPI_Bcast(g, c->Dn, MPI_FLOAT, 0, c->comm) != MPI_SUCCESS) return 0;
    if (c->rank == 0 && c->P > 1) *c->bytes += (int64_t)4 * c->Dn;
    for (l = 1; l <= m->scratch->nd; l++)
        if (m->cfg.mlp_reg[l] > 0) {
            float two_r = 2.0f * m->cfg.mlp_reg[l], *gw = ncf__grad_of(m, m->w[l]);
            size_t j, nw = (size_t)m->cfg.layers[l - 1] * m->cfg.layers[l];
            for (j = 0; j < nw; j++) gw[j] += two_r * m->w[l][j];
        }
    return 1;
}

/* Each own group's item records, sorted by item, in list[0]: the (item, group) partials of
   this rank's examples. */
static void ncf__group_records(ncf__mpi *c, const ncf_model *m)
{
    const struct ncf__scratch *s = m->scratch;
    size_t R = ncf__rec_size(c);
    int q, j, g, at = 0, fill[NCF_MPI_GROUPS];
    for (g = c->g0; g < c->g1; g++) c->llen[g] = 0;
    for (q = 0; q < s->batch.nitem; q++)
        for (j = 0; j < c->pn[q]; j++) c->llen[c->pg[s->batch.istart[q] + j]]++;
    for (g = c->g0; g < c->g1; at += c->llen[g++]) c->loff[g] = at, fill[g] = at;
    for (q = 0; q < s->batch.nitem; q++)
        for (j = 0; j < c->pn[q]; j++) {
            int p = s->batch.istart[q] + j;
            uint8_t *rec = c->list[0] + (size_t)fill[c->pg[p]]++ * R;
            int32_t head[2];
            head[0] = (int32_t)(s->batch.ikey[s->batch.istart[q]] >> 32), head[1] = c->pcount[p];
            memcpy(rec, head, sizeof head);
            memcpy(rec + NCF__REC_HEAD, c->pval + (size_t)p * c->D, sizeof(float) * (size_t)c->D);
        }
}

/* out = the records of x and y (each sorted by item) merged, an item in both summed x + y;
   returns the count. */
static int ncf__merge_records(const ncf__mpi *c, uint8_t *out, const uint8_t *x, int nx, const uint8_t *y, int ny)
{
    size_t R = ncf__rec_size(c);
    int i = 0, j = 0, n = 0, d;
    for (; i < nx || j < ny; n++) {
        int32_t hx[2] = {INT32_MAX, 0}, hy[2] = {INT32_MAX, 0};
        if (i < nx) memcpy(hx, x + (size_t)i * R, sizeof hx);
        if (j < ny) memcpy(hy, y + (size_t)j * R, sizeof hy);
        if (hx[0] != hy[0]) {
            memcpy(out + (size_t)n * R, hx[0] < hy[0] ? x + (size_t)i++ * R : y + (size_t)j++ * R, R);
            continue;
        }
        { /* (both) */
            float *v = (float *)(void *)(out + (size_t)n * R + NCF__REC_HEAD);
            const float *w = (const float *)(const void *)(y + (size_t)j++ * R + NCF__REC_HEAD);
            memcpy(out + (size_t)n * R, x + (size_t)i++ * R, R);
            for (d = 0; d < c->D; d++) v[d] += w[d];
            hx[1] += hy[1];
            memcpy(out + (size_t)n * R, hx, sizeof hx);
        }
    }
    return n;
}

/* 2b. The items' gradients: each group's (item, sum) records folded by the dense gradient's
   tree, lists merged by item; rank 0's root to all, in msg[1]. A level's lists cover disjoint
   groups, so together they hold at most a batch of records. Returns the records' count, or -1
   when MPI failed. */
static int ncf__mpi_items(ncf__mpi *c, const ncf_model *m)
{
    size_t R = ncf__rec_size(c);
    int a, l, step, left, right, nrq, got = 0, w, nout;
    MPI_Request rq[2];
    MPI_Status st[2];
    ncf__group_records(c, m);
    for (l = 0, step = 1; step < NCF_MPI_GROUPS; l++, step *= 2) {
        uint8_t *t;
        int recv_at = -1;
        for (a = 0, nrq = 0; a < NCF_MPI_GROUPS; a += 2 * step) {
            ncf__fold_pair(c, a, step, &left, &right);
            if (left == c->rank && right >= 0 && right != c->rank) {
                if (MPI_Irecv(c->msg[0], (int)c->msg_cap, MPI_BYTE, right, NCF__MPI_TAG_ROWS + l, c->comm, &rq[nrq]) !=
                    MPI_SUCCESS)
                    return -1;
                recv_at = nrq++;
            } else if (left != c->rank && right == c->rank) {
                int n = c->llen[a + step];
                if (MPI_Isend(c->list[0] + (size_t)c->loff[a + step] * R, (int)(n * R), MPI_BYTE, left,
                              NCF__MPI_TAG_ROWS + l, c->comm, &rq[nrq++]) != MPI_SUCCESS)
                    return -1;
                *c->bytes += (int64_t)(n * R);
            }
        }
        if (nrq && MPI_Waitall(nrq, rq, st) != MPI_SUCCESS) return -1;
        if (recv_at >= 0 && MPI_Get_count(&st[recv_at], MPI_BYTE, &got) != MPI_SUCCESS) return -1;
        for (a = 0, w = 0; a < NCF_MPI_GROUPS; a += 2 * step) { /* this level's sums, into list[1] */
            const uint8_t *y = NULL;
            int ny = 0, at = w;
            ncf__fold_pair(c, a, step, &left, &right);
            if (left != c->rank) continue;
            if (right == c->rank) y = c->list[0] + (size_t)c->loff[a + step] * R, ny = c->llen[a + step];
            else if (right >= 0) y = c->msg[0], ny = (int)((size_t)got / R);
            w += ncf__merge_records(c, c->list[1] + (size_t)w * R, c->list[0] + (size_t)c->loff[a] * R, c->llen[a], y,
                                    ny);
            c->loff[a] = at, c->llen[a] = w - at;
        }
        t = c->list[0], c->list[0] = c->list[1], c->list[1] = t;
    }
    nout = c->rank == 0 ? c->llen[0] : 0;
    if (c->rank == 0) memcpy(c->msg[1], c->list[0] + (size_t)c->loff[0] * R, (size_t)nout * R);
    if (MPI_Bcast(&nout, 1, MPI_INT, 0, c->comm) != MPI_SUCCESS ||
        MPI_Bcast(c->msg[1], (int)(nout * R), MPI_BYTE, 0, c->comm) != MPI_SUCCESS)
        return -1;
    if (c->rank == 0 && c->P > 1) *c->bytes += (int64_t)(nout * R);
    return nout;
}

/* 2c. The loss: every rank gathers the groups' sums and folds them in group order. */
static int ncf__mpi_loss(ncf__mpi *c, ncf_model *m, int n, double *loss)
{
    int r, g;
    double sum = 0;
    for (r = 0; r < c->P; r++) {
        c->displs[r] = (int)((int64_t)NCF_MPI_GROUPS * r / c->P);
        c->counts[r] = (int)((int64_t)NCF_MPI_GROUPS * (r + 1) / c->P) - c->displs[r];
    }
    if (MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, c->gloss, c->counts, c->displs, MPI_DOUBLE, c->comm) !=
        MPI_SUCCESS)
        return 0;
    if (c->P > 1) *c->bytes += (int64_t)8 * c->counts[c->rank];
    for (g = 0; g < NCF_MPI_GROUPS; g++) sum += c->gloss[g];
    *loss = ncf__plus_dense_l2(m, sum / n);
    return 1;
}

/* The rows of item record i, prefetched: they are scattered over tables far larger than the
   caches. */
static void ncf__mpi_prefetch_record(const ncf__mpi *c, const ncf_model *m, int i)
{
    const struct ncf__scratch *s = m->scratch;
    int32_t item;
    int t, d;
    memcpy(&item, c->msg[1] + (size_t)i * ncf__rec_size(c), sizeof item);
    for (t = 0; t < s->tables.n; t++) {
        int D = s->tables.tab[t].D;
        const float *p = s->tables.tab[t].item + (size_t)item * D;
        size_t off = (size_t)(p - m->params);
        for (d = 0; d < D; d += 16) {
            NCF__PREFETCH(p + d);
            if (m->adam_m) NCF__PREFETCH(m->adam_m + off + d), NCF__PREFETCH(m->adam_v + off + d);
        }
    }
}

/* 3. Item record i's rows updated (lazy Adam, SGD), or their gradients placed for dense Adam. */
static int ncf__mpi_record_update(ncf__mpi *c, ncf_model *m, int i, int n, const ncf__adam_k *k)
{
    const struct ncf__scratch *s = m->scratch;
    const uint8_t *rec = c->msg[1] + (size_t)i * ncf__rec_size(c);
    float *v = (float *)(void *)(rec + NCF__REC_HEAD), coef, cc;
    int32_t head[2];
    int t, d, ld, bad = 0;
    memcpy(head, rec, sizeof head);
    for (t = 0; t < s->tables.n; v += s->tables.tab[t++].D) {
        int D = s->tables.tab[t].D;
        const float *p = s->tables.tab[t].item + (size_t)head[0] * D;
        ncf__row_source(m, t, 1, &ld, &coef, n);
        cc = coef * (float)head[1];
        if (cc != 0.0f)
            for (d = 0; d < D; d++) v[d] += cc * p[d];
        if (ncf__dense_adam(m)) memcpy(ncf__grad_of(m, p), v, sizeof(float) * (size_t)D);
        else bad |= ncf__update_with(m, (size_t)(p - m->params), (size_t)D, v, k);
    }
    return bad;
}

/* 3. The dense layers and the items (the same on every rank), and this rank's users (summed
   here, their examples being all here); dense Adam then moves every row. */
static int ncf__mpi_update(ncf__mpi *c, ncf_model *m, int nrec, int n, const ncf__adam_k *k)
{
    struct ncf__scratch *s = m->scratch;
    ncf__team team = NCF__TEAM_INIT;
    int64_t nd = ncf__layer_updates_count(m), ni = NCF__CEIL_DIV(nrec, NCF__ROWS_PER_UNIT);
    int64_t units = nd + ni + NCF__CEIL_DIV(s->batch.nuser, NCF__ROWS_PER_UNIT);
    const ncf__adam_k *rows_k = ncf__dense_adam(m) ? NULL : k;
    int bad = 0;
    NCF__PARALLEL(ncf__rows_parallel(m, n))
    {
        ncf__ctx x = ncf__join(&team);
        int64_t lo, hi, u;
        int i;
        while (ncf__claim(&x, units, 1, &lo, &hi))
            for (u = lo; u < hi; u++) {
                int b = 0, q0 = (int)(u - nd - ni) * NCF__ROWS_PER_UNIT;
                if (u < nd) b = ncf__layer_update(m, u, k);
                else if (u < nd + ni)
                    for (i = (int)(u - nd) * NCF__ROWS_PER_UNIT; i < nrec && i < (int)(u - nd + 1) * NCF__ROWS_PER_UNIT;
                         i++) {
                        if (i + 4 < nrec) ncf__mpi_prefetch_record(c, m, i + 4);
                        b |= ncf__mpi_record_update(c, m, i, n, k);
                    }
                else
                    b = ncf__update_batch_rows(m, 0, n, q0,
                                               q0 + NCF__ROWS_PER_UNIT < s->batch.nuser ? q0 + NCF__ROWS_PER_UNIT
                                                                                        : s->batch.nuser,
                                               s->batch.nuser, rows_k);
                if (b) ncf__flag(&bad, 1);
            }
        if (ncf__dense_adam(m)) ncf__emb_phase(&x, m, k, &bad);
    }
    return bad;
}

/* One step; 0 with *rc set when it failed (the same on every rank). */
static int ncf__mpi_step(ncf__mpi *c, ncf_model *m, const ncf_sampler *smp, int epoch, int64_t start, int n,
                         double *loss, int *rc)
{
    ncf__batch bt;
    ncf__adam_k k = ncf__adam_consts(m, m->step + 1);
    int nrec, nl = ncf__mpi_batch(c, smp, epoch, start, n);
    memset(&bt, 0, sizeof bt);
    bt.users = c->users, bt.items = c->items, bt.labels = c->labels, bt.n = n; /* (n: the mean is the batch's) */
    ncf__mpi_compute(c, m, &bt, nl);
    if (!ncf__mpi_dense(c, m) || (nrec = ncf__mpi_items(c, m)) < 0 || !ncf__mpi_loss(c, m, n, loss)) {
        *rc = ncf__fail(NCF_ERR_IO, "ncf_mpi_train_epoch: an MPI call failed at step %lld", (long long)m->step + 1);
        return 0;
    }
    if (!(*loss - *loss == 0.0)) return *rc = ncf__step_failed(m, *loss, 0), 0;
    m->step++;
    m->scratch->mpi.stale = 1;
    if (ncf__mpi_update(c, m, nrec, n, &k)) return *rc = ncf__step_failed(m, *loss, 1), 0;
    return 1;
}

/* A model shard must hold the users of the data's shard, of the same data. */
static int ncf__shard_matches(const ncf_model *m, const ncf_dataset *d, const char *what)
{
    const struct ncf__scratch *s = m->scratch;
    if (!s->mpi.users) return NCF_OK;
    if (!ncf__is_shard(d) || s->mpi.users != d->num_users || s->mpi.user0 != d->shard.user_lo ||
        s->mpi.user_end != d->shard.user_hi)
        return ncf__fail(NCF_ERR_ARG, "%s: the model shard holds users [%d, %d) of %d, the data%s [%d, %d) of %d", what,
                         s->mpi.user0, s->mpi.user_end, s->mpi.users, ncf__is_shard(d) ? "'s shard" : " (not a shard)",
                         ncf__is_shard(d) ? d->shard.user_lo : 0, ncf__is_shard(d) ? d->shard.user_hi : d->num_users,
                         d->num_users);
    return NCF_OK;
}

static int ncf__mpi_train_args(ncf_model *m, const ncf_sampler *s, MPI_Comm comm)
{
    int lo, hi, rc;
    if (!m || !s || !s->data) return ncf__fail(NCF_ERR_ARG, "ncf_mpi_train_epoch: NULL model or sampler");
    if (m->scratch->in_place) return ncf__writable(m, "ncf_mpi_train_epoch");
    if (m->cfg.optimizer == NCF_OPT_ALS)
        return ncf__fail(NCF_ERR_ARG, "ncf_mpi_train_epoch: ALS trains on one process");
    if (!ncf__is_shard(s->data))
        return ncf__fail(NCF_ERR_ARG, "ncf_mpi_train_epoch: the data is not a shard (ncf_mpi_shard)");
    if ((rc = ncf__my_users(s->data, comm, &lo, &hi, "ncf_mpi_train_epoch")) != NCF_OK) return rc;
    if ((rc = ncf__shard_matches(m, s->data, "ncf_mpi_train_epoch")) != NCF_OK) return rc;
    if (s->data->num_users > NCF__USERS(m) || s->data->num_items > m->cfg.num_items)
        return ncf__fail(NCF_ERR_ARG, "ncf_mpi_train_epoch: the data has %d users and %d items, the model %d and %d",
                         s->data->num_users, s->data->num_items, NCF__USERS(m), m->cfg.num_items);
    return ncf__reserve(m, m->cfg.batch_size);
}

NCFDEF int ncf_mpi_train_examples(ncf_model *m, const ncf_sampler *s, int epoch, int64_t first, int64_t count,
                                  MPI_Comm comm, ncf_progress_fn progress, void *ctx, double *mean_loss)
{
    ncf__mpi c;
    int rc, B;
    int64_t pos, end, steps = 0;
    double sum = 0;
    memset(&c, 0, sizeof c);
    rc = ncf__mpi_train_args(m, s, comm);
    if (rc == NCF_OK) rc = ncf__epoch_span("ncf_mpi_train_examples", epoch, first, count, s->num_examples);
    if (rc == NCF_OK) rc = ncf__mpi_alloc(&c, m, s->data, comm);
    if ((rc = ncf__mpi_agree(comm, rc)) != NCF_OK) {
        ncf__mpi_free(&c);
        return rc;
    }
    B = m->cfg.batch_size, end = first + count;
    { /* the transposed kernels, afresh: the caller may have changed the parameters */
        ncf__team team = NCF__TEAM_INIT;
        NCF__PARALLEL(1)
        {
            ncf__ctx x = ncf__join(&team);
            ncf__transpose_phase(&x, m);
        }
    }
    for (pos = first; pos < end; pos += B, steps++) {
        int n = (int)(end - pos < B ? end - pos : B);
        double loss = 0;
        if (!ncf__mpi_step(&c, m, s, epoch, pos, n, &loss, &rc)) break;
        sum += loss * n;
        if (progress && (steps % 16 == 15 || pos + n == end))
            progress(ctx, pos + n - first, count, sum / (double)(pos + n - first));
    }
    ncf__mpi_free(&c);
    if (rc == NCF_OK && mean_loss) *mean_loss = count ? sum / (double)count : 0;
    return rc;
}

NCFDEF int ncf_mpi_sync(ncf_model *m, const ncf_dataset *shard, MPI_Comm comm)
{
    struct ncf__scratch *s;
    float *arr[3];
    int P = 1, rc = NCF_OK, mine[2] = {0, 0}, *ranges = NULL, *counts = NULL, *displs = NULL, t, a, r;
    if (!m || !m->scratch || !shard || !ncf__is_shard(shard))
        rc = ncf__fail(NCF_ERR_ARG, "ncf_mpi_sync: need a model and a shard");
    else if (m->scratch->mpi.users) /* a model shard's users stay on their ranks */
        return ncf__mpi_agree(comm, ncf__shard_matches(m, shard, "ncf_mpi_sync"));
    else if (MPI_Comm_size(comm, &P) != MPI_SUCCESS)
        rc = ncf__fail(NCF_ERR_ARG, "ncf_mpi_sync: not a valid communicator");
    else {
        ranges = NCF__NEW(int, 2 * (size_t)P), counts = NCF__NEW(int, P), displs = NCF__NEW(int, P);
        if (!ranges || !counts || !displs) rc = ncf__fail(NCF_ERR_NOMEM, "ncf_mpi_sync: out of memory");
        mine[0] = shard->shard.user_lo, mine[1] = shard->shard.user_hi;
    }
    if ((rc = ncf__mpi_agree(comm, rc)) != NCF_OK) goto done;
    s = m->scratch;
    arr[0] = m->params, arr[1] = m->adam_m, arr[2] = m->adam_v;
    if (MPI_Allgather(mine, 2, MPI_INT, ranges, 2, MPI_INT, comm) != MPI_SUCCESS) rc = NCF_ERR_IO;
    for (t = 0; t < s->tables.n && rc == NCF_OK; t++)
        for (a = 0; a < 3 && rc == NCF_OK; a++) {
            int D = s->tables.tab[t].D;
            float *rows;
            if (!arr[a]) continue;
            rows = arr[a] + (s->tables.tab[t].user - m->params);
            for (r = 0; r < P; r++) displs[r] = ranges[2 * r] * D, counts[r] = (ranges[2 * r + 1] - ranges[2 * r]) * D;
            if (MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rows, counts, displs, MPI_FLOAT, comm) !=
                MPI_SUCCESS)
                rc = NCF_ERR_IO;
        }
    if (rc != NCF_OK) rc = ncf__fail(NCF_ERR_IO, "ncf_mpi_sync: an MPI call failed");
    else s->mpi.stale = 0;
done:
    NCF_FREE(ranges);
    NCF_FREE(counts);
    NCF_FREE(displs);
    return rc;
}

NCFDEF int ncf_mpi_train_epoch(ncf_model *m, const ncf_sampler *s, int epoch, MPI_Comm comm, ncf_progress_fn progress,
                               void *ctx, double *mean_loss)
{
    int rc = ncf_mpi_train_examples(m, s, epoch, 0, s ? s->num_examples : 0, comm, progress, ctx, mean_loss);
    if (rc == NCF_OK && (rc = ncf_mpi_sync(m, s->data, comm)) == NCF_OK) m->epoch = epoch;
    if (m && m->scratch) ncf__refresh_cache(m); /* ready to serve and evaluate */
    return rc;
}

static NCF__MAYBE_UNUSED int64_t ncf__mpi_bytes_sent(const ncf_model *m)
{
    return m && m->scratch ? m->scratch->mpi.bytes : 0;
}

/* ---- model shards: each rank holds its users' rows only ---- */

/* A model shard of users [lo, hi): its scratch says so (an empty range keeps one idle row). */
static void ncf__mark_shard(ncf_model *m, int users, int lo, int hi)
{
    m->scratch->mpi.user0 = lo, m->scratch->mpi.user_end = hi, m->scratch->mpi.users = users;
    m->scratch->mpi.stale = 1; /* (what reads other users' rows refuses) */
}

/* Every user's rated items in m (copied from a shard, which has only users [lo, hi)'s): each
   rank's run of them, gathered in rank order. */
static int ncf__gather_rated(ncf_model *m, int lo, int hi, MPI_Comm comm)
{
    int U = NCF__USERS(m), P, q, u, rc = NCF_OK, *cnt = NULL, *at = NULL, mine;
    int64_t *sp = NCF__ZNEW(int64_t, (size_t)U + 1), bytes = m->rated_ptr[hi] - m->rated_ptr[lo];
    uint8_t *sv = NULL;
    MPI_Comm_size(comm, &P);
    cnt = NCF__NEW(int, P), at = NCF__NEW(int, P);
    if (!sp || !cnt || !at) rc = ncf__fail(NCF_ERR_NOMEM, "out of memory for the rated items");
    for (u = lo; rc == NCF_OK && u < hi; u++) sp[u + 1] = m->rated_ptr[u + 1] - m->rated_ptr[u];
    mine = bytes > INT32_MAX ? -1 : (int)bytes;
    if ((rc = ncf__mpi_agree(comm, rc)) == NCF_OK &&
        (MPI_Allreduce(MPI_IN_PLACE, sp + 1, U, MPI_INT64_T, MPI_SUM, comm) != MPI_SUCCESS ||
         MPI_Allgather(&mine, 1, MPI_INT, cnt, 1, MPI_INT, comm) != MPI_SUCCESS))
        rc = ncf__fail(NCF_ERR_IO, "MPI failed gathering the rated items");
    if (rc == NCF_OK) {
        for (u = 0; u < U; u++) sp[u + 1] += sp[u];
        for (q = 0, bytes = 0; q < P; q++) at[q] = (int)bytes, bytes += cnt[q] < 0 ? INT32_MAX : cnt[q];
        if (bytes > INT32_MAX) rc = ncf__fail(NCF_ERR_DATA, "more than 2 GB of rated items to gather");
        else if (!(sv = NCF__NEW(uint8_t, bytes + 1)))
            rc = ncf__fail(NCF_ERR_NOMEM, "out of memory for the rated items");
    }
    if ((rc = ncf__mpi_agree(comm, rc)) == NCF_OK &&
        MPI_Allgatherv(m->rated + m->rated_ptr[lo], mine, MPI_BYTE, sv, cnt, at, MPI_BYTE, comm) != MPI_SUCCESS)
        rc = ncf__fail(NCF_ERR_IO, "MPI failed gathering the rated items");
    if (rc == NCF_OK) {
        NCF_FREE(m->rated_ptr), NCF_FREE(m->rated);
        m->rated_ptr = sp, m->rated = sv, sp = NULL, sv = NULL;
    }
    NCF_FREE(sp), NCF_FREE(sv), NCF_FREE(cnt), NCF_FREE(at);
    return rc;
}

NCFDEF int ncf_mpi_model_create(ncf_model **out, const ncf_config *cfg, const ncf_dataset *data, MPI_Comm comm)
{
    ncf_model *m = NULL;
    ncf_config c;
    int lo = 0, hi = 0, rc = NCF_OK;
    if (out) *out = NULL;
    if (!out || !cfg || !data || !data->user_ptr)
        rc = ncf__fail(NCF_ERR_ARG, "ncf_mpi_model_create: NULL argument, or a dataset not loaded");
    else if (data->num_users != cfg->num_users || data->num_items != cfg->num_items)
        rc = ncf__fail(NCF_ERR_ARG, "ncf_mpi_model_create: the data has %d users and %d items, the config %d and %d",
                       data->num_users, data->num_items, cfg->num_users, cfg->num_items);
    else rc = ncf__my_users(data, comm, &lo, &hi, "ncf_mpi_model_create");
    if (rc == NCF_OK) {
        c = *cfg, c.num_users = hi > lo ? hi - lo : 1;
        if ((rc = ncf__model_shell(&m, &c)) == NCF_OK) {
            ncf__mark_shard(m, cfg->num_users, lo, hi);
            if ((rc = ncf__own_params(m)) == NCF_OK) ncf__init_params(m);
            if (rc == NCF_OK && (data->raw_user || data->user_text) && (data->raw_item || data->item_text))
                rc = ncf__copy_ids(m, data);
        }
    }
    if (data && ncf__is_shard(data) && (rc = ncf__mpi_agree(comm, rc)) == NCF_OK && m->rated_ptr)
        rc = ncf__gather_rated(m, lo, hi, comm);
    if ((rc = ncf__mpi_agree(comm, rc)) != NCF_OK) {
        ncf_model_free(m);
        return rc;
    }
    *out = m;
    return NCF_OK;
}

/* Rows [lo, lo + rows) of each user table of block src (laid out as m's tensors) into dst,
   laid out with `rows` user rows; the other tensors whole. */
static void ncf__copy_shard_rows(const ncf_model *m, const float *src, float *dst, int lo, int rows)
{
    size_t at = 0;
    int t;
    for (t = 0; t < m->num_tensors; t++) {
        const ncf_tensor *T = &m->tensors[t];
        size_t n = (size_t)(t < m->scratch->tables.n ? rows : T->rows) * (size_t)T->cols;
        memcpy(dst + at, src + T->offset + (t < m->scratch->tables.n ? (size_t)lo * T->cols : 0), sizeof(float) * n);
        at += n;
    }
}

/* A whole model's memory as the shard of users [lo, hi) (made before anything changes, so a
   failure elsewhere leaves the model whole). */
typedef struct {
    float *block[4]; /* parameters, gradients, moments */
    int32_t *tu, *ti;
    uint8_t *tf; /* the touched-row lists */
    int lo, hi, rows, from;
    size_t n;
} ncf__shard_plan;

static void ncf__shard_plan_free(ncf__shard_plan *p)
{
    int a;
    for (a = 0; a < 4; a++) NCF_FREE(p->block[a]);
    NCF_FREE(p->tu), NCF_FREE(p->ti), NCF_FREE(p->tf);
    memset(p, 0, sizeof *p);
}

static int ncf__shard_prepare(const ncf_model *m, int lo, int hi, ncf__shard_plan *p)
{
    const float *arr[4];
    size_t cut = 0;
    int a, t, failed = 0;
    memset(p, 0, sizeof *p);
    p->lo = lo, p->hi = hi, p->rows = hi > lo ? hi - lo : 1;
    p->from = lo < m->cfg.num_users ? lo : m->cfg.num_users - 1; /* (no users: any row stands idle) */
    for (t = 0; t < m->scratch->tables.n; t++) cut += (size_t)(m->cfg.num_users - p->rows) * m->tensors[t].cols;
    p->n = m->num_params - cut;
    arr[0] = m->params, arr[1] = m->grads, arr[2] = m->adam_m, arr[3] = m->adam_v;
    for (a = 0; a < 4; a++)
        if (arr[a] && !(p->block[a] = a == 1 ? NCF__ZNEW(float, p->n) : NCF__NEW(float, p->n))) failed = 1;
    p->tu = NCF__NEW(int32_t, p->rows), p->ti = NCF__NEW(int32_t, m->cfg.num_items);
    p->tf = NCF__ZNEW(uint8_t, (size_t)p->rows + (size_t)m->cfg.num_items);
    if (!failed && p->tu && p->ti && p->tf) return NCF_OK;
    ncf__shard_plan_free(p);
    return ncf__fail(NCF_ERR_NOMEM, "out of memory for a model shard of %lu parameters", (unsigned long)p->n);
}

static void ncf__shard_commit(ncf_model *m, ncf__shard_plan *p)
{
    struct ncf__scratch *s = m->scratch;
    float **arr[4];
    size_t off = 0;
    int a, t;
    arr[0] = &m->params, arr[1] = &m->grads, arr[2] = &m->adam_m, arr[3] = &m->adam_v;
    for (a = 0; a < 4; a++)
        if (p->block[a]) {
            if (a != 1) ncf__copy_shard_rows(m, *arr[a], p->block[a], p->from, p->rows);
            NCF_FREE(*arr[a]);
            *arr[a] = p->block[a], p->block[a] = NULL;
        }
    for (t = 0; t < m->num_tensors; t++) { /* the shard's layout */
        if (t < s->tables.n) m->tensors[t].rows = p->rows;
        m->tensors[t].offset = off;
        off += (size_t)m->tensors[t].rows * m->tensors[t].cols;
        if (t + 1 == s->tables.n * 2) s->emb_params = off;
    }
    NCF_FREE(s->touched.user), NCF_FREE(s->touched.item), NCF_FREE(s->touched.flag);
    s->touched.user = p->tu, s->touched.item = p->ti, s->touched.flag = p->tf;
    p->tu = p->ti = NULL, p->tf = NULL;
    NCF_FREE(s->cache.user_order); /* (serving's: a shard does not serve) */
    s->cache.user_order = NULL;
    ncf__mark_shard(m, m->cfg.num_users, p->lo, p->hi);
    m->cfg.num_users = p->rows, m->num_params = p->n;
    ncf__set_views(m, m->params, m->params + s->emb_params);
}

NCFDEF int ncf_mpi_shard_model(ncf_model *m, const ncf_dataset *data, MPI_Comm comm)
{
    ncf__shard_plan plan;
    int lo = 0, hi = 0, rc = NCF_OK;
    memset(&plan, 0, sizeof plan);
    if (!m || !m->scratch || !data || !data->user_ptr)
        rc = ncf__fail(NCF_ERR_ARG, "ncf_mpi_shard_model: NULL model, or a dataset not loaded");
    else if (m->scratch->mpi.users) rc = ncf__fail(NCF_ERR_ARG, "ncf_mpi_shard_model: the model is a shard already");
    else if (m->scratch->in_place || !m->params || !m->grads)
        rc = ncf__fail(NCF_ERR_ARG, "ncf_mpi_shard_model: the model does not train (read in place, or int8)");
    else if (ncf__pending(m))
        rc = ncf__fail(NCF_ERR_ARG, "ncf_mpi_shard_model: the model has gradients not yet applied (ncf_update)");
    else if (data->num_users != m->cfg.num_users || data->num_items != m->cfg.num_items)
        rc = ncf__fail(NCF_ERR_ARG, "ncf_mpi_shard_model: the data has %d users and %d items, the model %d and %d",
                       data->num_users, data->num_items, m->cfg.num_users, m->cfg.num_items);
    else if ((rc = ncf__my_users(data, comm, &lo, &hi, "ncf_mpi_shard_model")) == NCF_OK)
        rc = ncf__shard_prepare(m, lo, hi, &plan);
    if ((rc = ncf__mpi_agree(comm, rc)) != NCF_OK) {
        ncf__shard_plan_free(&plan);
        return rc;
    }
    ncf__shard_commit(m, &plan);
    return NCF_OK;
}

#ifndef NCF_NO_STDIO
/* The CRC of bytes that follow bytes whose CRC was crc (0 before any), as zlib's crc32 (a file
   checked or written as it streams past). */
static uint32_t ncf__crc32_more(uint32_t crc, const uint8_t *p, size_t n)
{
    uint32_t c = crc ^ 0xFFFFFFFFu;
    size_t i;
    for (i = 0; i < n; i++) c = ncf__crc_table[(c ^ p[i]) & 255] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

/* Rows [lo, lo + rows) of user table t, or (other tables) tensor t whole, of a float block of
   the file at `at` (laid out as the whole model W), into block x laid out as the shard m. */
static void ncf__read_shard_block(const ncf_model *m, const ncf_model *W, ncf__reader *r, uint64_t at, float *x, int lo)
{
    int t;
    for (t = 0; t < m->num_tensors; t++) {
        const ncf_tensor *T = &m->tensors[t];
        size_t j, n = (size_t)T->rows * T->cols, skip = t < m->scratch->tables.n ? (size_t)lo * T->cols : 0;
        r->at = (size_t)(at + 4 * (W->tensors[t].offset + skip));
        for (j = 0; j < n; j++) ncf__get_f32(r, x + T->offset + j);
    }
}

/* The shard of users [lo, hi) of the file at p (len bytes, its CRC checked): W is its whole
   model's shell. */
static int ncf__shard_of_file(const uint8_t *p, size_t len, ncf_model *W, const ncf__layout *L, int lo, int hi,
                              ncf_model **out)
{
    ncf_model *m = NULL;
    ncf_config c = W->cfg;
    ncf__reader r;
    int rc;
    c.num_users = hi > lo ? hi - lo : 1;
    if ((rc = ncf__model_shell(&m, &c)) != NCF_OK) return rc;
    ncf__mark_shard(m, W->cfg.num_users, lo, hi);
    r.p = p, r.n = len - 4;
    if (hi <= lo) lo = lo < W->cfg.num_users ? lo : W->cfg.num_users - 1; /* (no users: any row stands idle) */
    rc = ncf__own_params(m);
    if (rc == NCF_OK && (L->flags & NCF__FILE_IDS)) {
        rc = ncf__read_id_table(m, L, &r, 0);
        if (rc == NCF_OK) rc = ncf__read_id_table(m, L, &r, 1);
    }
    if (rc == NCF_OK && (L->flags & NCF__FILE_RATED)) rc = ncf__read_rated(m, L, &r);
    if (rc == NCF_OK) {
        ncf__read_shard_block(m, W, &r, L->params, m->params, lo);
        if ((L->flags & NCF__FILE_ADAM) && m->adam_m) {
            ncf__read_shard_block(m, W, &r, L->adam, m->adam_m, lo);
            ncf__read_shard_block(m, W, &r, L->adam + 4 * (uint64_t)W->num_params, m->adam_v, lo);
        }
        rc = ncf__check_finite(m);
    }
    if (rc != NCF_OK) {
        ncf_model_free(m);
        return rc;
    }
    *out = m;
    return NCF_OK;
}

#if defined(NCF__POSIX_FILES)
/* Whether the file's CRC holds, read through fd in pieces (the page cache's, not this
   process's memory). */
static int ncf__file_crc_ok(int fd, size_t len)
{
    uint8_t buf[1 << 16], tail[4];
    size_t at = 0, k;
    uint32_t crc = 0, want = 0;
    ssize_t got;
    int i;
    if (lseek(fd, 0, SEEK_SET) != 0) return 0;
    for (at = 0; at < len - 4; at += (size_t)got) {
        k = len - 4 - at < sizeof buf ? len - 4 - at : sizeof buf;
        if ((got = read(fd, buf, k)) <= 0) return 0;
        crc = ncf__crc32_more(crc, buf, (size_t)got);
    }
    for (k = 0; k < 4; k += (size_t)got)
        if ((got = read(fd, tail + k, 4 - k)) <= 0) return 0;
    for (i = 0; i < 4; i++) want |= (uint32_t)tail[i] << (8 * i);
    return crc == want;
}
#endif

/* This rank's shard of the model file at path (POSIX: mapped, only its parts read). */
static int ncf__load_shard(const char *path, int lo, int hi, ncf_model **out)
{
#if defined(NCF__POSIX_FILES)
    struct stat st;
    ncf_model *W = NULL;
    ncf__layout L;
    uint64_t step = 0, epoch = 0;
    void *map = MAP_FAILED;
    int fd = open(path, O_RDONLY), rc;
    if (fd < 0) return ncf__fail(NCF_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 8)
        rc = ncf__fail(NCF_ERR_IO, "%s: not a model file (not a regular file, or too short)", path);
    else if ((uint64_t)st.st_size > (uint64_t)(size_t)-1)
        rc = ncf__fail(NCF_ERR_NOMEM, "%s: a file this size cannot be mapped here", path);
    else if ((map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0)) == MAP_FAILED)
        rc = ncf__fail(NCF_ERR_IO, "%s: cannot map: %s", path, strerror(errno));
    else if ((rc = ncf__open_file(map, (size_t)st.st_size, 0, &W, &L, &step, &epoch)) != NCF_OK) {
    } else if (!ncf__file_crc_ok(fd, (size_t)st.st_size))
        rc = ncf__fail(NCF_ERR_PARSE, "model CRC mismatch (the file is damaged)");
    else if (L.flags & NCF__FILE_INT8)
        rc = ncf__fail(NCF_ERR_ARG, "an int8 file only serves: a model shard trains from a float file");
    else if (hi > W->cfg.num_users)
        rc = ncf__fail(NCF_ERR_ARG, "the data has more users than the model's %d", W->cfg.num_users);
    else if ((rc = ncf__shard_of_file((const uint8_t *)map, (size_t)st.st_size, W, &L, lo, hi, out)) == NCF_OK)
        (*out)->step = (int64_t)step, (*out)->epoch = (int64_t)epoch;
    ncf_model_free(W);
    if (map != MAP_FAILED) munmap(map, (size_t)st.st_size);
    close(fd);
    return rc == NCF_OK ? NCF_OK : ncf__prefix_error(rc, path);
#else /* the whole file read, then this rank's rows kept */
    ncf__shard_plan plan;
    int rc = ncf_load(out, path);
    if (rc == NCF_OK && (hi > (*out)->cfg.num_users || ncf__pending(*out)))
        rc = ncf__fail(NCF_ERR_ARG, "%s: the data has more users than the model's %d", path, (*out)->cfg.num_users);
    if (rc == NCF_OK && (rc = ncf__shard_prepare(*out, lo, hi, &plan)) == NCF_OK) ncf__shard_commit(*out, &plan);
    if (rc != NCF_OK) ncf_model_free(*out), *out = NULL;
    return rc;
#endif
}

NCFDEF int ncf_mpi_load(ncf_model **out, const char *path, const ncf_dataset *data, MPI_Comm comm)
{
    ncf_model *m = NULL;
    int lo = 0, hi = 0, rc;
    if (out) *out = NULL;
    if (!out || !path || !data || !data->user_ptr)
        rc = ncf__fail(NCF_ERR_ARG, "ncf_mpi_load: NULL argument, or a dataset not loaded");
    else if ((rc = ncf__my_users(data, comm, &lo, &hi, "ncf_mpi_load")) == NCF_OK)
        rc = ncf__load_shard(path, lo, hi, &m);
    if (rc == NCF_OK && (NCF__USERS(m) != data->num_users || m->cfg.num_items != data->num_items))
        rc = ncf__fail(NCF_ERR_ARG, "ncf_mpi_load: %s has %d users and %d items, the data %d and %d", path,
                       NCF__USERS(m), m->cfg.num_items, data->num_users, data->num_items);
    if ((rc = ncf__mpi_agree(comm, rc)) != NCF_OK) {
        ncf_model_free(m);
        return rc;
    }
    *out = m;
    return NCF_OK;
}

#define NCF__MPI_PIECE 65536 /* floats of a shard's rows in one message to rank 0 as it saves */
#define NCF__MPI_TAG_SAVE 7500

/* A file written in order as it is made, its CRC kept as it goes. */
typedef struct {
    ncf__outfile *out;
    uint32_t crc;
    uint64_t at;
} ncf__stream;

static void ncf__stream_put(ncf__stream *f, const void *p, size_t n)
{
    f->crc = ncf__crc32_more(f->crc, (const uint8_t *)p, n);
    ncf__outfile_write(f->out, p, n);
    f->at += n;
}

static void ncf__stream_floats(ncf__stream *f, const float *x, size_t n)
{
    uint8_t buf[4096];
    ncf__writer w;
    size_t i, j, k;
    for (i = 0; i < n; i += k) {
        k = n - i < sizeof buf / 4 ? n - i : sizeof buf / 4;
        for (w.p = buf, w.at = 0, j = 0; j < k; j++) ncf__put_f32(&w, x[i + j]);
        ncf__stream_put(f, buf, w.at);
    }
}

static void ncf__stream_u64(ncf__stream *f, uint64_t v)
{
    uint8_t b[8];
    ncf__writer w;
    w.p = b, w.at = 0;
    ncf__put_u64(&w, v);
    ncf__stream_put(f, b, 8);
}

static void ncf__stream_zeros_to(ncf__stream *f, uint64_t at)
{
    static const uint8_t zero[8] = {0};
    while (f->at < at) ncf__stream_put(f, zero, at - f->at < 8 ? (size_t)(at - f->at) : 8);
}

/* User table t of block a (0 parameters, 1 and 2 the moments) across the ranks, in user order:
   rank 0 writes each rank's rows as their pieces arrive, the others send theirs. */
static int ncf__save_user_table(const ncf_model *m, int t, const float *block, const int *ranges, int P, int rank,
                                ncf__stream *f, float *piece, MPI_Comm comm)
{
    const float *mine = block + m->tensors[t].offset;
    int r, cols = m->tensors[t].cols, ok = 1;
    for (r = 0; r < P; r++) {
        size_t n = (size_t)(ranges[2 * r + 1] - ranges[2 * r]) * cols, at, k;
        if (r != rank && rank != 0) continue;
        for (at = 0; at < n; at += k) {
            k = n - at < NCF__MPI_PIECE ? n - at : NCF__MPI_PIECE;
            if (rank == 0 && r == 0) ncf__stream_floats(f, mine + at, k);
            else if (rank == 0) {
                ok &= MPI_Recv(piece, (int)k, MPI_FLOAT, r, NCF__MPI_TAG_SAVE + t, comm, MPI_STATUS_IGNORE) ==
                    MPI_SUCCESS;
                ncf__stream_floats(f, piece, k);
            } else ok &= MPI_Send(mine + at, (int)k, MPI_FLOAT, 0, NCF__MPI_TAG_SAVE + t, comm) == MPI_SUCCESS;
        }
    }
    return ok;
}

/* The whole model's file as far as its tensors (header, ids, rated items), on rank 0. W is a
   shell of the whole model's config with the shard's ids. */
static void ncf__save_head(ncf__stream *f, const ncf_model *W, const ncf__layout *L, uint8_t *head)
{
    ncf__writer w;
    uint64_t u;
    int t;
    w.p = head, w.at = 0;
    ncf__put_header(&w, W, L->flags);
    for (t = 0; (L->flags & NCF__FILE_IDS) && t < 2; t++) ncf__put_ids(&w, ncf__model_ids(W, t), L->id_at[t]);
    ncf__stream_put(f, head, (size_t)L->rated);
    if (L->flags & NCF__FILE_RATED) {
        ncf__stream_u64(f, L->nrated);
        for (u = 0; u <= (uint64_t)W->cfg.num_users; u++) ncf__stream_u64(f, (uint64_t)W->rated_ptr[u]);
        ncf__stream_put(f, W->rated, (size_t)L->nrated);
    }
    ncf__stream_zeros_to(f, L->params);
}

/* A shell of the whole model the shard m is part of, its ids and moments borrowed (for the
   file's layout and header: ncf__lend_back returns them). */
static int ncf__whole_shell(const ncf_model *m, ncf_model **W)
{
    ncf_config c = m->cfg;
    int rc;
    c.num_users = m->scratch->mpi.users;
    if ((rc = ncf__model_shell(W, &c)) != NCF_OK) return rc;
    (*W)->step = m->step, (*W)->epoch = m->epoch, (*W)->adam_m = m->adam_m;
    (*W)->raw_user = m->raw_user, (*W)->raw_item = m->raw_item, (*W)->user_text = m->user_text;
    (*W)->item_text = m->item_text, (*W)->user_text_at = m->user_text_at, (*W)->item_text_at = m->item_text_at;
    (*W)->rated_ptr = m->rated_ptr, (*W)->rated = m->rated;
    return NCF_OK;
}

static void ncf__lend_back(ncf_model *W)
{
    if (!W) return;
    W->adam_m = NULL, W->raw_user = W->raw_item = NULL, W->user_text = W->item_text = NULL;
    W->user_text_at = W->item_text_at = NULL, W->rated_ptr = NULL, W->rated = NULL;
    ncf_model_free(W);
}

NCFDEF int ncf_mpi_save(const ncf_model *m, const char *path, int flags, MPI_Comm comm)
{
    ncf_model *W = NULL;
    ncf__layout L;
    ncf__stream f;
    const float *blocks[3];
    float *piece = NULL;
    uint8_t *head = NULL, crc[4];
    int rank = 0, P = 1, rc = NCF_OK, mine[2], *ranges = NULL, adam = 0, a, t, ok = 1;
    memset(&f, 0, sizeof f);
    if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS || MPI_Comm_size(comm, &P) != MPI_SUCCESS)
        rc = ncf__fail(NCF_ERR_ARG, "ncf_mpi_save: not a valid communicator");
    else if (!m || !m->scratch || !path || !*path) rc = ncf__fail(NCF_ERR_ARG, "ncf_mpi_save: NULL model or path");
    else if (!m->scratch->mpi.users) /* a whole model: rank 0's copy */
        return ncf__mpi_agree(comm, rank == 0 ? ncf_save(m, path, flags) : NCF_OK);
    else if (flags & NCF_SAVE_INT8)
        rc = ncf__fail(NCF_ERR_ARG,
                       "ncf_mpi_save: a model shard is saved as floats (ncf_load the file and ncf_save "
                       "it with NCF_SAVE_INT8)");
    else if ((rc = ncf__savable(m, flags, "ncf_mpi_save")) == NCF_OK) {
        mine[0] = m->scratch->mpi.user0, mine[1] = m->scratch->mpi.user_end;
        if (!(ranges = NCF__NEW(int, 2 * (size_t)P))) rc = ncf__fail(NCF_ERR_NOMEM, "ncf_mpi_save: out of memory");
        else if (rank == 0 && (rc = ncf__whole_shell(m, &W)) == NCF_OK) {
            adam = ncf__save_layout(W, flags, &L);
            head = NCF__ZNEW(uint8_t, (size_t)L.rated), piece = NCF__NEW(float, NCF__MPI_PIECE);
            if (!head || !piece) rc = ncf__fail(NCF_ERR_NOMEM, "ncf_mpi_save: out of memory");
            else rc = ncf__outfile_open(&f.out, path);
        }
    }
    if ((rc = ncf__mpi_agree(comm, rc)) == NCF_OK &&
        MPI_Allgather(mine, 2, MPI_INT, ranges, 2, MPI_INT, comm) != MPI_SUCCESS)
        rc = ncf__fail(NCF_ERR_IO, "ncf_mpi_save: an MPI call failed");
    if ((rc = ncf__mpi_agree(comm, rc)) == NCF_OK) {
        adam = ncf__saves_moments(m, flags);
        blocks[0] = m->params, blocks[1] = m->adam_m, blocks[2] = m->adam_v;
        if (rank == 0) ncf__save_head(&f, W, &L, head);
        for (a = 0; a < (adam ? 3 : 1); a++)
            for (t = 0; t < m->num_tensors; t++) {
                if (t < m->scratch->tables.n)
                    ok &= ncf__save_user_table(m, t, blocks[a], ranges, P, rank, &f, piece, comm);
                else if (rank == 0)
                    ncf__stream_floats(&f, blocks[a] + m->tensors[t].offset,
                                       (size_t)m->tensors[t].rows * m->tensors[t].cols);
            }
        if (rank == 0) {
            ncf__writer w;
            w.p = crc, w.at = 0;
            ncf__put_u32(&w, f.crc);
            if (f.at == L.end) ncf__outfile_write(f.out, crc, 4);
            else
                rc = ncf__fail(NCF_ERR_IO, "ncf_mpi_save: %s: wrote %llu bytes, the layout says %llu", path,
                               (unsigned long long)f.at, (unsigned long long)L.end);
            rc = ok && rc == NCF_OK ? ncf__outfile_commit(f.out)
                                    : (ncf__outfile_discard(f.out), rc != NCF_OK ? rc : NCF_ERR_IO);
            f.out = NULL;
        }
        if (!ok && rc == NCF_OK) rc = NCF_ERR_IO;
        if (rc == NCF_ERR_IO && !ok) rc = ncf__fail(NCF_ERR_IO, "ncf_mpi_save: an MPI call failed");
        rc = ncf__mpi_agree(comm, rc);
    }
    if (f.out) ncf__outfile_discard(f.out);
    ncf__lend_back(W);
    NCF_FREE(head), NCF_FREE(piece), NCF_FREE(ranges);
    return rc;
}
#endif

NCFDEF int ncf_mpi_evaluate(ncf_model *m, const ncf_dataset *d, const ncf_eval_opts *opts, MPI_Comm comm,
                            ncf_metrics *out)
{
    ncf_eval_opts dflt = ncf_eval_opts_default();
    const ncf_eval_opts *o = opts ? opts : &dflt;
    int rank = 0, P = 1, r, rc, mine[2] = {0, 0}, *ranges = NULL, *counts = NULL, *displs = NULL;
    int64_t held = 0, *ranks = NULL;
    rc = MPI_Comm_rank(comm, &rank) == MPI_SUCCESS && MPI_Comm_size(comm, &P) == MPI_SUCCESS
        ? ncf__eval_args(m, d, o, out)
        : ncf__fail(NCF_ERR_ARG, "ncf_mpi_evaluate: not a valid communicator");
    if (rc == NCF_OK && !ncf__is_shard(d) && NCF__MPI_STALE(m)) /* (each rank would score others' users) */
        rc = ncf__fail(NCF_ERR_ARG, "ncf_mpi_evaluate: whole data on every rank: " NCF__STALE_TEXT);
    if (rc == NCF_OK) rc = ncf__shard_matches(m, d, "ncf_mpi_evaluate");
    if (rc == NCF_OK) { /* a shard's users, or (whole data on every rank) an even split */
        mine[0] = ncf__is_shard(d) ? d->shard.user_lo : (int)((int64_t)d->num_users * rank / P);
        mine[1] = ncf__is_shard(d) ? d->shard.user_hi : (int)((int64_t)d->num_users * (rank + 1) / P);
        ranks = NCF__NEW(int64_t, (size_t)d->num_users + 1), ranges = NCF__NEW(int, 2 * (size_t)P);
        counts = NCF__NEW(int, P), displs = NCF__NEW(int, P);
        if (!ranks || !ranges || !counts || !displs) rc = ncf__fail(NCF_ERR_NOMEM, "out of memory for evaluation");
        else held = ncf__eval_held(d, o->target, mine[0], mine[1]);
    }
    if ((rc = ncf__mpi_agree(comm, rc)) != NCF_OK) goto done;
    if (MPI_Allreduce(MPI_IN_PLACE, &held, 1, MPI_INT64_T, MPI_SUM, comm) != MPI_SUCCESS ||
        MPI_Allgather(mine, 2, MPI_INT, ranges, 2, MPI_INT, comm) != MPI_SUCCESS) {
        rc = ncf__fail(NCF_ERR_IO, "ncf_mpi_evaluate: an MPI call failed");
        goto done;
    }
    for (r = 0; r < P; r++) { /* the ranks' users must tile the data in rank order */
        displs[r] = ranges[2 * r], counts[r] = ranges[2 * r + 1] - ranges[2 * r];
        if (displs[r] != (r ? displs[r - 1] + counts[r - 1] : 0) || counts[r] < 0 ||
            (r == P - 1 && displs[r] + counts[r] != d->num_users))
            rc = ncf__fail(NCF_ERR_ARG,
                           "ncf_mpi_evaluate: the ranks' users do not cover the data once in rank "
                           "order (shards made with another communicator?)");
    }
    if (rc == NCF_OK) rc = ncf__eval_ranks(m, d, o, ncf__eval_share(o, held), mine[0], mine[1], ranks + mine[0]);
    if ((rc = ncf__mpi_agree(comm, rc)) != NCF_OK) goto done;
    if (MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ranks, counts, displs, MPI_INT64_T, comm) != MPI_SUCCESS)
        rc = ncf__fail(NCF_ERR_IO, "ncf_mpi_evaluate: an MPI call failed");
    else ncf__metrics_of(ranks, d->num_users, o->k, out); /* in user order, as one process sums */
done:
    NCF_FREE(ranks);
    NCF_FREE(ranges);
    NCF_FREE(counts);
    NCF_FREE(displs);
    return rc;
}
#endif /* NCF_MPI */

#endif /* NCF_IMPLEMENTATION_DONE */
#endif /* NCF_IMPLEMENTATION */

/* ---- >>licence ----------------------------------------------------------------------------------
MIT License

Copyright (c) 2026 the ncf.h authors

Permission is hereby granted, free of charge, to any person obtaining a copy of
this software and associated documentation files (the "Software"), to deal in
the Software without restriction, including without limitation the rights to
use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies
of the Software, and to permit persons to whom the Software is furnished to do
so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
------------------------------------------------------------------------------
*/
