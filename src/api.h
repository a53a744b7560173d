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
