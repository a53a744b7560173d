/* The C side of the Python package: ncf.h's implementation, and calls with plain arguments
   (numbers, strings, arrays) where the API takes option structs, so ctypes needs no copy of
   any struct layout. Every call returns an NCF_* status or a count; ncf_error_text() says why.
   ctypes releases the GIL for the length of each call. */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 199309L /* NOLINT(bugprone-reserved-identifier): clock_gettime, for the bench's C baseline */
#endif
#define NCF_IMPLEMENTATION
#include "ncf.h"

#include <time.h>

#include <stdlib.h>
#include <string.h>

#if defined(_WIN32)
#define PY_EXPORT __declspec(dllexport)
#else
#define PY_EXPORT __attribute__((visibility("default")))
#endif

/* A load's options from the package's keyword arguments. */
static ncf_dataset_opts py_load_opts(int holdout, double fraction, long long cutoff, int validation, double min_rating,
                                     const char *sep, int min_ratings, int min_item_ratings, int weighting,
                                     double alpha, unsigned long long seed, const char *strength_col)
{
    ncf_dataset_opts o = ncf_dataset_opts_default();
    o.holdout = holdout, o.validation = validation, o.min_ratings = min_ratings, o.min_item_ratings = min_item_ratings;
    if (fraction > 0) o.holdout_fraction = (float)fraction;
    o.holdout_cutoff = cutoff, o.weighting = weighting, o.alpha = (float)alpha, o.seed = seed;
    if (min_rating > -1e300) o.min_rating = (float)min_rating;
    o.sep = sep && *sep ? sep : NULL;
    if (strength_col && *strength_col) o.columns[NCF_COL_STRENGTH] = strength_col;
    return o;
}

static int py_load_with(ncf_dataset *d, const char *path, const char *buf, size_t len, ncf_dataset_opts *o,
                        int weighting, int time_col, int header)
{
    if (!buf) return o->header = header, ncf_load_dataset(d, path, o);
    /* arrays: user, item[, strength][, time] columns, TAB-separated, no header */
    o->header = NCF_HEADER_NO, o->sep = "\t", o->columns[NCF_COL_USER] = "1", o->columns[NCF_COL_ITEM] = "2";
    o->columns[NCF_COL_RATING] = weighting ? "3" : "";
    if (weighting) o->columns[NCF_COL_STRENGTH] = "3";
    o->columns[NCF_COL_TIME] = time_col ? (weighting ? "4" : "3") : "";
    return ncf_load_dataset_mem(d, path, buf, len, o);
}

/* Every call that makes a handle returns an NCF_* status and the handle in *out (NULL on failure). */
PY_EXPORT int ncfpy_load(const char *path, const char *buf, size_t len, int holdout, double fraction, long long cutoff,
                         int validation, double min_rating, const char *sep, int min_ratings, int min_item_ratings,
                         int weighting, double alpha, unsigned long long seed, const char *strength_col, int header,
                         int time_col, int eval_negatives, const char *events, const char *event_col, ncf_dataset **out)
{
    ncf_dataset_opts o = py_load_opts(holdout, fraction, cutoff, validation, min_rating, sep, min_ratings,
                                      min_item_ratings, weighting, alpha, seed, strength_col);
    ncf_dataset *d = (ncf_dataset *)calloc(1, sizeof *d);
    int rc;
    *out = NULL;
    if (!d) return NCF_ERR_NOMEM;
    o.eval_negatives = eval_negatives, o.events = events;
    if (event_col) o.columns[NCF_COL_EVENT] = event_col;
    if ((rc = py_load_with(d, path, buf, len, &o, weighting, time_col, header)) != NCF_OK) {
        free(d);
        return rc;
    }
    *out = d;
    return NCF_OK;
}

/* v in decimal at t; the characters written (sprintf's cost is most of a large log's). */
static size_t py_decimal(char *t, long long v)
{
    char d[24];
    size_t n = 0, k = 0;
    unsigned long long x = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
    do d[n++] = (char)('0' + x % 10), x /= 10;
    while (x);
    if (v < 0) t[k++] = '-';
    while (n) t[k++] = d[--n];
    return k;
}

/* Integer arrays (users, items, and strengths and times or NULL) as the TSV text ncfpy_load
   reads, written here rather than in Python: a log of millions of rows in a fraction of a
   second. NULL when out of memory. */
PY_EXPORT char *ncfpy_arrays_text(const long long *users, const long long *items, const double *strengths,
                                  const long long *times, long long n, long long *len)
{
    size_t cap = (size_t)n * (21 * 3 + 26) + 1, at = 0;
    char *t = n >= 0 ? (char *)malloc(cap) : NULL;
    long long j;
    if (!t) return NULL;
    for (j = 0; j < n; j++) {
        at += py_decimal(t + at, users[j]), t[at++] = '\t';
        at += py_decimal(t + at, items[j]);
        if (strengths) at += (size_t)sprintf(t + at, "\t%.17g", strengths[j]);
        if (times) t[at++] = '\t', at += py_decimal(t + at, times[j]);
        t[at++] = '\n';
    }
    t[at] = 0, *len = (long long)at;
    return t;
}

PY_EXPORT void ncfpy_free(void *p) { free(p); }

PY_EXPORT void ncfpy_dataset_free(ncf_dataset *d)
{
    if (d) ncf_dataset_free(d), free(d);
}

/* What a dataset holds and its load report, as numbers in a fixed order (the package names them). */
PY_EXPORT void ncfpy_dataset_info(const ncf_dataset *d, double *out)
{
    const ncf_load_report *r = &d->report;
    int64_t test = 0, val = 0;
    int u;
    for (u = 0; u < d->num_users; u++) {
        test += d->test_ptr ? d->test_ptr[u + 1] - d->test_ptr[u] : d->test_item[u] >= 0;
        val += d->val_ptr ? d->val_ptr[u + 1] - d->val_ptr[u] : d->val_item && d->val_item[u] >= 0;
    }
    out[0] = d->num_users, out[1] = d->num_items, out[2] = (double)d->num_train, out[3] = (double)test;
    out[4] = (double)val, out[5] = (double)r->interactions, out[6] = r->users_read, out[7] = r->items_read;
    out[8] = (double)r->duplicates, out[9] = (double)r->below_min_rating, out[10] = r->users_few_ratings;
    out[11] = r->items_few_item_ratings, out[12] = r->users_every_item, out[13] = r->holdout;
    out[14] = r->users_only_held_out, out[15] = r->items_only_held_out, out[16] = r->weight_min,
    out[17] = r->weight_max;
    out[18] = d->test_ptr != NULL;
    out[19] = (double)r->nonpositive_ratings, out[20] = (double)r->events_dropped, out[21] = r->event_kinds;
    out[22] = (double)r->other_event_lines;
}

/* Event kind k of the load's report: its name into name (size bytes), lines, kept and strength
   into out[0..3); 0, or -1 past the kinds. */
PY_EXPORT int ncfpy_dataset_event(const ncf_dataset *d, int k, char *name, size_t size, double *out)
{
    const ncf_load_report *r = &d->report;
    if (k < 0 || k >= r->event_kinds || size < sizeof r->events[k].name) return -1;
    memcpy(name, r->events[k].name, sizeof r->events[k].name);
    out[0] = (double)r->events[k].lines, out[1] = r->events[k].kept, out[2] = r->events[k].strength;
    return 0;
}

PY_EXPORT int ncfpy_model_create(const ncf_dataset *d, int type, int factors, const int *layers, int num_layers,
                                 double lr, double reg, int num_neg, int batch, double init_sd, unsigned long long seed,
                                 int optimizer, double unobserved, ncf_model **out)
{
    ncf_config c = ncf_config_default();
    ncf_model *m = NULL;
    int l, rc;
    *out = NULL;
    c.model = (ncf_model_type)type, c.num_users = d->num_users, c.num_items = d->num_items;
    if (factors > 0) c.mf_dim = factors;
    for (l = 0; l < num_layers && l < NCF_MAX_LAYERS; l++) c.layers[l] = layers[l];
    if (num_layers > 0) c.num_layers = num_layers; /* (past NCF_MAX_LAYERS: ncf_model_create says so) */
    if (lr > 0) c.lr = (float)lr;
    c.mf_reg = (float)reg;
    for (l = 0; l < NCF_MAX_LAYERS; l++) c.mlp_reg[l] = l == 0 ? (float)reg : 0.0f;
    if (num_neg >= 0) c.num_neg = num_neg;
    if (batch > 0) c.batch_size = batch;
    if (init_sd > 0) c.init_sd = (float)init_sd;
    c.seed = seed, c.optimizer = (ncf_optimizer)optimizer;
    if (unobserved > 0) c.unobserved = (float)unobserved;
    if ((rc = ncf_model_create(&m, &c)) != NCF_OK) return rc;
    if ((rc = ncf_model_set_ids(m, d)) != NCF_OK) {
        ncf_model_free(m);
        return rc;
    }
    *out = m;
    return NCF_OK;
}

typedef int (*py_progress)(void *user, long long epoch, long long done, long long total, double loss);
/* An epoch's end: its count, mean loss, and validation HR, NDCG, MRR, recall, precision, MAP at
   the chosen k (NULL without validation). */
typedef void (*py_epoch)(void *user, int epoch, double loss, const double *figures);
typedef struct {
    py_progress fn;
    py_epoch at_end;
    long long epoch, last;
    int stop;
} py_cb;

static void py_on_epoch(void *user, int epoch, double loss, const ncf_metrics *v)
{
    py_cb *cb = (py_cb *)user;
    double x[6];
    x[0] = v->hr, x[1] = v->ndcg, x[2] = v->mrr, x[3] = v->recall, x[4] = v->precision, x[5] = v->map;
    if (cb->at_end) cb->at_end(NULL, epoch, loss, x);
}

/* (an epoch begins where the examples done fall back) */
static void py_on_progress(void *user, int64_t done, int64_t total, double loss)
{
    py_cb *cb = (py_cb *)user;
    if (done <= cb->last || cb->last < 0) cb->epoch++;
    cb->last = done;
    if (cb->fn) cb->stop |= cb->fn(NULL, cb->epoch, (long long)done, (long long)total, loss);
}

/* ncf_fit (validation chooses) or, without validation items, plain epochs; the epoch kept
   in chosen[0], the number trained in chosen[1], the chosen figure in value. */
PY_EXPORT int ncfpy_fit(ncf_model *m, const ncf_dataset *d, int epochs, int patience, int metric, int k, int full,
                        int decay, int by_positive, py_progress fn, py_epoch at_end, int *chosen, double *value)
{
    py_cb cb;
    cb.fn = fn, cb.at_end = at_end, cb.epoch = 0, cb.last = -1, cb.stop = 0;
    if ((d->val_item || d->val_ptr) && epochs > 0) {
        ncf_fit_opts o = ncf_fit_opts_default();
        ncf_fit_report r;
        int rc;
        o.epochs = epochs, o.patience = patience, o.eval.metric = metric, o.eval.k = k, o.eval.full_ranking = full;
        o.decay = decay, o.by_positive = by_positive;
        o.eval.cold_only = d->report.holdout == NCF_HOLDOUT_ITEMS; /* (a cold split chooses among the unseen items) */
        o.progress = fn ? py_on_progress : NULL, o.ctx = &cb, o.epoch_done = at_end ? py_on_epoch : NULL;
        rc = ncf_fit(m, d, &o, &r);
        if (rc != NCF_OK) return rc;
        chosen[0] = r.chosen_epoch, chosen[1] = r.epochs_trained, *value = ncf_metric_value(&r.chosen, metric);
        return NCF_OK;
    } else {
        ncf_sampler s;
        int rc = ncf_sampler_init(&s, d, m->cfg.num_neg, m->cfg.seed), e;
        s.by_positive = by_positive;
        for (e = 1; rc == NCF_OK && e <= epochs; e++) {
            float lr = m->cfg.lr;
            double loss = 0;
            cb.last = -1, cb.epoch = e - 1;
            if (decay) m->cfg.lr = ncf__decayed_lr(lr, e - 1, epochs);
            rc = ncf_train_epoch(m, &s, (int)m->epoch + 1, fn ? py_on_progress : NULL, &cb, &loss);
            m->cfg.lr = lr;
            if (rc == NCF_OK && at_end) at_end(NULL, (int)m->epoch, loss, NULL);
        }
        chosen[0] = (int)m->epoch, chosen[1] = epochs, *value = 0;
        return rc;
    }
}

/* Run i of a search as NCFPY_TUNE_COLUMNS numbers, in the order python/ncf names them. */
#define NCFPY_TUNE_COLUMNS 27
static void py_trial_row(const ncf_tune_report *r, int i, int metric, double *x)
{
    const ncf_trial *t = &r->runs[i];
    x[0] = t->trial, x[1] = t->rung, x[2] = t->cfg.model, x[3] = t->cfg.mf_dim;
    x[4] = t->cfg.model == NCF_NEUMF || t->cfg.model == NCF_MLP ? t->cfg.layers[0] : 0;
    x[5] = t->cfg.lr, x[6] = t->cfg.mf_reg, x[7] = t->cfg.num_neg, x[8] = t->cfg.batch_size, x[9] = t->weighted;
    x[10] = t->epochs, x[11] = t->epochs_trained, x[12] = t->chosen_epoch, x[13] = t->val.hr, x[14] = t->val.ndcg;
    x[15] = t->val.mrr, x[16] = ncf_metric_value(&t->val, metric), x[17] = t->planned_seconds, x[18] = i == r->best;
    x[19] = t->decay, x[20] = t->beside, x[21] = t->partner, x[22] = t->cfg.optimizer;
    x[23] = t->cfg.optimizer == NCF_OPT_ALS ? t->cfg.unobserved : 0;
    x[24] = t->features[NCF_USER], x[25] = t->features[NCF_ITEM], x[26] = t->feature_scale;
}

/* Hears each run of a search as it ends (row; NULL before the first) and the next as it starts
   (trial -1 at the end). */
typedef void (*py_tune_progress)(void *user, const double *row, int trial, int rung, int epochs, double planned);
typedef struct {
    py_tune_progress fn;
    int heard, metric;
} py_tune_cb;

static void py_on_tune(void *user, const ncf_tune_report *so_far, const ncf_trial *next)
{
    py_tune_cb *cb = (py_tune_cb *)user;
    double row[NCFPY_TUNE_COLUMNS];
    int trial = next ? next->trial : -1, rung = next ? next->rung : -1, epochs = next ? next->epochs : 0;
    double planned = next ? next->planned_seconds : 0;
    if (cb->heard == so_far->num_runs) cb->fn(NULL, NULL, trial, rung, epochs, planned);
    while (cb->heard < so_far->num_runs) {
        py_trial_row(so_far, cb->heard++, cb->metric, row);
        row[18] = 0; /* (the winner is known at the end) */
        if (cb->heard == so_far->num_runs) cb->fn(NULL, row, trial, rung, epochs, planned);
        else cb->fn(NULL, row, -2, 0, 0, 0);
    }
}

/* The search (ncf_tune) into a report the caller frees with ncfpy_tune_free; NULL on failure.
   budget <= 0: from the data's size (ncf_tune_opts.budget 0). */
PY_EXPORT int ncfpy_tune(const ncf_dataset *d, double budget, unsigned long long seed, int max_epochs, int patience,
                         int metric, int k, int full, int seeds, const ncf_features *user_features,
                         const ncf_features *item_features, int only, py_tune_progress fn, ncf_tune_report **out)
{
    ncf_tune_opts o = ncf_tune_opts_default();
    ncf_tune_report *r = (ncf_tune_report *)calloc(1, sizeof *r);
    py_tune_cb cb;
    int rc;
    *out = NULL;
    if (!r) return NCF_ERR_NOMEM;
    cb.fn = fn, cb.heard = 0, cb.metric = metric;
    if (budget <= 0) budget = 0;
    o.budget = budget, o.seed = seed, o.eval.metric = metric, o.eval.k = k, o.eval.full_ranking = full;
    o.eval.cold_only = d && d->report.holdout == NCF_HOLDOUT_ITEMS; /* (as fit chooses) */
    o.features[NCF_USER] = user_features, o.features[NCF_ITEM] = item_features;
    o.feature_flags[NCF_USER] = only & 1 ? NCF_FEATURES_NO_ID : 0,
    o.feature_flags[NCF_ITEM] = only & 2 ? NCF_FEATURES_NO_ID : 0;
    if (max_epochs > 0) o.max_epochs = max_epochs;
    if (patience >= 0) o.patience = patience;
    if (seeds > 0) o.seeds = seeds;
    o.progress = fn ? py_on_tune : NULL, o.ctx = &cb;
    if ((rc = ncf_tune(d, &o, r)) != NCF_OK) {
        free(r);
        return rc;
    }
    *out = r;
    return NCF_OK;
}

/* The report's shape: runs, the winner's row, settings drawn, too small (1: nothing ran), the
   seeds the final averages, the epochs it trains. */
PY_EXPORT void ncfpy_tune_info(const ncf_tune_report *r, int *out)
{
    out[0] = r->num_runs, out[1] = r->best, out[2] = r->num_trials, out[3] = r->too_small, out[4] = r->seeds;
    out[5] = r->final_epochs;
}

/* The winner's seeds averaged (rung 3) as a row; NCF_ERR_ARG when they did not run. */
PY_EXPORT int ncfpy_tune_averaged(const ncf_tune_report *r, int metric, double *x)
{
    ncf_tune_report one = *r;
    if (r->averaged.rung != 3) return NCF_ERR_ARG;
    one.runs = (ncf_trial *)&r->averaged, one.num_runs = 1, one.best = -1;
    py_trial_row(&one, 0, metric, x);
    return NCF_OK;
}

PY_EXPORT int ncfpy_tune_row(const ncf_tune_report *r, int i, int metric, double *x)
{
    if (i < 0 || i >= r->num_runs) return NCF_ERR_ARG;
    py_trial_row(r, i, metric, x);
    return NCF_OK;
}

/* The winner trained on training + validation (ncf_tune_final). */
PY_EXPORT int ncfpy_tune_final(const ncf_tune_report *r, const ncf_dataset *d, py_progress fn, ncf_model **out)
{
    py_cb cb;
    cb.fn = fn, cb.at_end = NULL, cb.epoch = 0, cb.last = -1, cb.stop = 0;
    *out = NULL;
    return ncf_tune_final(out, d, r, fn ? py_on_progress : NULL, &cb);
}

PY_EXPORT void ncfpy_tune_free(ncf_tune_report *r)
{
    if (r) ncf_tune_report_free(r), free(r);
}

/* Figures at each of ks (10 numbers each: hr, ndcg, mrr, recall, precision, map, coverage,
   popularity, users, k); m NULL: popularity's. */
PY_EXPORT int ncfpy_evaluate(ncf_model *m, const ncf_dataset *d, int target, int full, const int *ks, int nk,
                             double *out)
{
    ncf_eval_opts o = ncf_eval_opts_default();
    ncf_metrics r[NCF_MAX_KS];
    int j, rc;
    o.target = target, o.full_ranking = full || d->test_ptr != NULL;
    if (nk < 1 || nk > NCF_MAX_KS) return ncf_evaluate_at(m, d, &o, ks, nk, r);
    if ((rc = ncf_evaluate_at(m, d, &o, ks, nk, r)) != NCF_OK) return rc;
    for (j = 0; j < nk; j++) {
        double *x = out + (size_t)10 * j;
        x[0] = r[j].hr, x[1] = r[j].ndcg, x[2] = r[j].mrr, x[3] = r[j].recall, x[4] = r[j].precision, x[5] = r[j].map;
        x[6] = r[j].coverage, x[7] = r[j].popularity, x[8] = r[j].users, x[9] = r[j].k;
    }
    return NCF_OK;
}

PY_EXPORT int ncfpy_load_model(const char *path, ncf_model **out)
{
    *out = NULL;
    return ncf_load(out, path);
}

/* A model as a file's bytes (Adam moments kept when it has them: a copy trains on exactly),
   into a buffer the caller releases with ncf_free; *len its size. NULL on failure. */
PY_EXPORT int ncfpy_save_mem(const ncf_model *m, void **buf, long long *len)
{
    size_t n = 0;
    int rc = ncf_save_mem(m, m->adam_m ? NCF_SAVE_ADAM : NCF_SAVE_MODEL, buf, &n);
    *len = (long long)n;
    return rc;
}

PY_EXPORT int ncfpy_load_mem(const char *buf, size_t len, ncf_model **out)
{
    *out = NULL;
    return ncf_load_mem(out, buf, len);
}

/* A copy of m into *out, which training or adding may change while m serves on. */
static int py_copy(const ncf_model *m, ncf_model **out)
{
    long long len = 0;
    void *buf = NULL;
    int rc = ncfpy_save_mem(m, &buf, &len);
    *out = NULL;
    if (rc == NCF_OK) rc = ncf_load_mem(out, buf, (size_t)len);
    ncf_free(buf);
    return rc;
}

/* m's copy grown to d's users and items (ncf_model_grow), to train on. */
PY_EXPORT int ncfpy_grown(const ncf_model *m, const ncf_dataset *d, ncf_model **out)
{
    int rc = py_copy(m, out);
    if (rc == NCF_OK && (rc = ncf_model_grow(out, d)) != NCF_OK) ncf_model_free(*out), *out = NULL;
    return rc;
}

/* m's copy with n users or items added (ncf_model_add): their ids back to back, each ended by a
   NUL, and their rows [n][ncf_row_size]. */
PY_EXPORT int ncfpy_added(const ncf_model *m, int side, const char *ids, int n, const float *rows, ncf_model **out)
{
    const char **each = n > 0 ? (const char **)malloc(sizeof(char *) * (size_t)n) : NULL;
    int rc, j;
    *out = NULL;
    if (!each) return NCF_ERR_NOMEM;
    for (j = 0; j < n; j++) each[j] = ids, ids += strlen(ids) + 1;
    rc = py_copy(m, out);
    if (rc == NCF_OK && (rc = ncf_model_add(out, side, each, rows, n)) != NCF_OK) ncf_model_free(*out), *out = NULL;
    free(each);
    return rc;
}

/* The settings a model was made with, for fit to make another of them: type, factors, layers'
   count, NCF_MAX_LAYERS widths, lr, L2, negatives, batch, init sd, optimizer, unobserved; the
   seed in *seed. */
#define NCFPY_CONFIG_NUMBERS (3 + NCF_MAX_LAYERS + 7)
PY_EXPORT int ncfpy_config_numbers(void) { return NCFPY_CONFIG_NUMBERS; }
PY_EXPORT void ncfpy_model_config(const ncf_model *m, double *out, unsigned long long *seed)
{
    const ncf_config *c = &m->cfg;
    double *x = out + 3 + NCF_MAX_LAYERS;
    int l;
    out[0] = c->model, out[1] = c->mf_dim, out[2] = c->num_layers;
    for (l = 0; l < NCF_MAX_LAYERS; l++) out[3 + l] = l < c->num_layers ? c->layers[l] : 0;
    x[0] = c->lr, x[1] = c->mf_reg, x[2] = c->num_neg, x[3] = c->batch_size, x[4] = c->init_sd, x[5] = c->optimizer;
    x[6] = c->unobserved, *seed = c->seed;
}

/* Every id of a side as int64 when the model's ids there are integers (1), else 0. */
PY_EXPORT int ncfpy_raw_ids(const ncf_model *m, int side, long long *out)
{
    const int64_t *raw = side == NCF_ITEM ? m->raw_item : m->raw_user;
    int j, n = side == NCF_ITEM ? m->cfg.num_items : m->cfg.num_users;
    if (!raw || (side == NCF_ITEM ? m->item_text : m->user_text)) return 0;
    for (j = 0; j < n; j++) out[j] = raw[j];
    return 1;
}

/* Every id of a side as written, each NUL-terminated, into buf (size bytes; buf NULL: only
   counts): the bytes, or a negative NCF_* code. is_data: h is a dataset, else a model. */
PY_EXPORT long long ncfpy_ids_text(const void *h, int is_data, int side, char *buf, long long size)
{
    const ncf_dataset *d = (const ncf_dataset *)h;
    const ncf_model *m = (const ncf_model *)h;
    char one[NCF_MAX_ID_BYTES + 1];
    long long at = 0;
    int j, len, n = is_data ? (side ? d->num_items : d->num_users) : (side ? m->cfg.num_items : m->cfg.num_users);
    for (j = 0; j < n; j++, at += len + 1) {
        len = is_data ? ncf_dataset_id(d, side, j, one, sizeof one) : ncf_id(m, side, j, one, sizeof one);
        if (len < 0) return len;
        if (!buf) continue;
        if (at + len + 1 > size) return NCF_ERR_ARG;
        memcpy(buf + at, one, (size_t)len + 1);
    }
    return at;
}

PY_EXPORT int ncfpy_dataset_raw_ids(const ncf_dataset *d, int side, long long *out)
{
    const int64_t *raw = side == NCF_ITEM ? d->raw_item : d->raw_user;
    int j, n = side == NCF_ITEM ? d->num_items : d->num_users;
    if (!raw) return 0;
    for (j = 0; j < n; j++) out[j] = raw[j];
    return 1;
}

/* A dataset's positives of one target (0 test, 1 validation, 2 training) as CSR over its
   indices: with ptr NULL, the count; else ptr [users + 1] and items filled. */
PY_EXPORT long long ncfpy_dataset_csr(const ncf_dataset *d, int target, long long *ptr, int *items)
{
    long long n = 0;
    int u;
    for (u = 0; u < d->num_users; u++) {
        const int32_t *many = target == 2 ? d->items : target == 1 ? d->val_items : d->test_items;
        const int64_t *at = target == 2 ? d->user_ptr : target == 1 ? d->val_ptr : d->test_ptr;
        int32_t one = target == 1 ? (d->val_item ? d->val_item[u] : -1) : target == 0 ? d->test_item[u] : -1;
        int64_t j;
        if (ptr) ptr[u] = n;
        if (at && many)
            for (j = at[u]; j < at[u + 1]; j++, n++)
                if (ptr) items[n] = many[j];
        if (!at && one >= 0) {
            if (ptr) items[n] = one;
            n++;
        }
    }
    if (ptr) ptr[d->num_users] = n;
    return n;
}

static ncf_rec_opts py_rec_opts(int k, int exclude_rated, const int32_t *allow, int num_allow, const int32_t *deny,
                                int num_deny, int probabilities)
{
    ncf_rec_opts o = ncf_rec_opts_default();
    o.k = k, o.exclude_rated = exclude_rated, o.allow = allow, o.num_allow = allow ? num_allow : 0;
    o.deny = deny, o.num_deny = deny ? num_deny : 0, o.probabilities = probabilities;
    return o;
}

/* One user's list (u an index, or a folded-in user given by its row). */
PY_EXPORT int ncfpy_recommend(const ncf_model *m, int u, const float *row, int k, int exclude_rated,
                              const int32_t *allow, int num_allow, const int32_t *deny, int num_deny, int probabilities,
                              int32_t *items, float *scores)
{
    ncf_rec_opts o = py_rec_opts(k, exclude_rated, allow, num_allow, deny, num_deny, probabilities);
    o.user_row = row;
    return ncf_recommend_index(m, row ? 0 : u, &o, items, scores);
}

PY_EXPORT int ncfpy_recommend_users(const ncf_model *m, const int32_t *users, int n, int k, int exclude_rated,
                                    const int32_t *allow, int num_allow, const int32_t *deny, int num_deny,
                                    int probabilities, int32_t *items, float *scores, int *counts)
{
    ncf_rec_opts o = py_rec_opts(k, exclude_rated, allow, num_allow, deny, num_deny, probabilities);
    return ncf_recommend_users(m, users, n, &o, items, scores, counts);
}

/* The rows of a new user (side 0) from the items it took, or of a new item from its users. */
PY_EXPORT int ncfpy_fold_in(const ncf_model *m, int side, const int32_t *given, int n, unsigned long long seed,
                            float *row)
{
    ncf_fold_opts f = ncf_fold_opts_default();
    f.seed = seed;
    return ncf_fold_in(m, side, given, n, &f, row);
}

PY_EXPORT int ncfpy_similar(const ncf_model *m, int side, int index, int k, const int32_t *allow, int num_allow,
                            const int32_t *deny, int num_deny, int32_t *out, float *scores)
{
    ncf_rec_opts o = py_rec_opts(k, 0, allow, num_allow, deny, num_deny, 0);
    return ncf_similar(m, side, index, &o, out, scores);
}

PY_EXPORT int ncfpy_predict(const ncf_model *m, const int32_t *users, const int32_t *items, int n, float *logits)
{
    return ncf_predict_index(m, users, items, n, logits);
}

/* A logit predicted for a folded-in side's row against n others. */
PY_EXPORT int ncfpy_predict_for(const ncf_model *m, int side, const float *row, const int32_t *others, int n,
                                float *logits)
{
    return ncf_predict_for(m, side, 0, row, others, n, logits);
}

PY_EXPORT int ncfpy_row(const ncf_model *m, int side, int index, float *row) { return ncf_row(m, side, index, row); }

/* Factors whose dot products are an MF or GMF model's logits: a user's row [width], an item's
   [width] (width = factors + 2 for MF: the biases and the output's bias ride on a 1; factors + 1
   for GMF: the output's bias). The GMF's output weights scale the users' side. Every row of the
   side into out ([rows][width]); NCF_ERR_ARG for NeuMF and MLP (their MLP scores a pair
   together: no vector of either alone gives it). */
PY_EXPORT int ncfpy_factors_width(const ncf_model *m)
{
    return m->cfg.model == NCF_MF ? m->cfg.mf_dim + 2 : m->cfg.model == NCF_GMF ? m->cfg.mf_dim + 1 : 0;
}

PY_EXPORT int ncfpy_factors(const ncf_model *m, int side, float *out)
{
    int F = m->cfg.mf_dim, width = ncfpy_factors_width(m), n = side ? m->cfg.num_items : m->cfg.num_users, j, f;
    float *row;
    if (!width) return NCF_ERR_ARG;
    if (!(row = (float *)calloc((size_t)ncf_row_size(m), sizeof(float)))) return NCF_ERR_NOMEM;
    for (j = 0; j < n; j++) {
        float *x = out + (size_t)j * width;
        int rc = ncf_row(m, side, j, row);
        if (rc != NCF_OK) return free(row), rc;
        for (f = 0; f < F; f++) x[f] = side == NCF_USER && m->w_out ? row[f] * m->w_out[f] : row[f];
        if (m->cfg.model == NCF_MF) {
            x[F] = side == NCF_USER ? row[F] + m->b_out[0] : 1.0f;
            x[F + 1] = side == NCF_USER ? 1.0f : row[F];
        } else x[F] = side == NCF_USER ? m->b_out[0] : 1.0f;
    }
    free(row);
    return NCF_OK;
}

PY_EXPORT int ncfpy_model_info(const ncf_model *m, long long *out)
{
    out[0] = m->cfg.num_users, out[1] = m->cfg.num_items, out[2] = m->cfg.model, out[3] = m->cfg.mf_dim;
    out[4] = (long long)m->epoch, out[5] = (long long)m->num_params, out[6] = m->adam_m != NULL;
    out[7] = m->rated != NULL;
    return NCF_OK;
}

/* The bench's C baseline: seconds for reps rounds of a top-k list for each of users[0..n)
   (batch 0: ncf_recommend_index a user at a time; 1: ncf_recommend_users, all at once). */
PY_EXPORT double ncfpy_time_recommend(const ncf_model *m, const int32_t *users, int n, int k, int reps, int batch,
                                      int32_t *items, float *scores, int *counts)
{
    ncf_rec_opts o = ncf_rec_opts_default();
    double t0, t1;
    int r, j;
#ifdef _WIN32
    t0 = (double)clock() / CLOCKS_PER_SEC;
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts), t0 = ts.tv_sec + 1e-9 * ts.tv_nsec;
#endif
    o.k = k;
    for (r = 0; r < reps; r++)
        if (batch) ncf_recommend_users(m, users, n, &o, items, scores, counts);
        else
            for (j = 0; j < n; j++) ncf_recommend_index(m, users[j], &o, items, scores);
#ifdef _WIN32
    t1 = (double)clock() / CLOCKS_PER_SEC;
#else
    clock_gettime(CLOCK_MONOTONIC, &ts), t1 = ts.tv_sec + 1e-9 * ts.tv_nsec;
#endif
    return t1 - t0;
}

/* ---- side features ---- */

/* A features table read from buf (len bytes; path names it in messages), into a new *out. */
PY_EXPORT int ncfpy_features_load(const char *path, const char *buf, size_t len, const char *columns, const char *sep,
                                  const char *token_sep, ncf_features **out)
{
    ncf_features_opts o = ncf_features_opts_default();
    int rc;
    *out = (ncf_features *)malloc(sizeof **out);
    if (!*out) return NCF_ERR_NOMEM;
    o.columns = columns && *columns ? columns : NULL, o.sep = sep && *sep ? sep : NULL;
    if (token_sep) o.token_sep = token_sep;
    if ((rc = ncf_load_features_mem(*out, path, buf, len, &o)) != NCF_OK) free(*out), *out = NULL;
    return rc;
}

/* A features table from a CSR matrix: n ids and nf names, each ended by a NUL, back to back. */
PY_EXPORT int ncfpy_features_csr(int n, const char *ids, int nf, const char *names, const long long *ptr,
                                 const int *idx, const float *w, ncf_features **out)
{
    const char **id = (const char **)malloc(sizeof(char *) * (size_t)(n > 0 ? n : 1));
    const char **nm = (const char **)malloc(sizeof(char *) * (size_t)(nf > 0 ? nf : 1));
    int64_t *p = (int64_t *)malloc(sizeof(int64_t) * (size_t)(n > 0 ? n + 1 : 1));
    int rc = NCF_ERR_NOMEM, j;
    *out = (ncf_features *)malloc(sizeof **out);
    if (id && nm && p && *out) {
        for (j = 0; j < n; j++) id[j] = ids, ids += strlen(ids) + 1;
        for (j = 0; j < nf; j++) nm[j] = names, names += strlen(names) + 1;
        for (j = 0; j <= n && n > 0; j++) p[j] = (int64_t)ptr[j];
        rc = ncf_features_from_csr(*out, n, id, nf, nm, p, (const int32_t *)idx, w);
    }
    if (rc != NCF_OK) free(*out), *out = NULL;
    free(id), free(nm), free(p);
    return rc;
}

PY_EXPORT void ncfpy_features_free(ncf_features *f)
{
    ncf_features_free(f);
    free(f);
}

/* Its entities, features and records into out[3]. */
PY_EXPORT void ncfpy_features_info(const ncf_features *f, long long *out)
{
    out[0] = f->num_entities, out[1] = f->num_features, out[2] = (long long)f->records;
}

PY_EXPORT int ncfpy_set_features(ncf_model *m, int side, const ncf_features *f, const ncf_dataset *d, int only,
                                 float scale)
{
    return ncf_model_set_features(m, side, f, d, only ? NCF_FEATURES_NO_ID : 0, scale);
}

/* m's copy with f's entities it lacks added from their features; their number in *added. */
PY_EXPORT int ncfpy_added_features(const ncf_model *m, int side, const ncf_features *f, ncf_model **out, int *added)
{
    int rc = py_copy(m, out);
    if (rc == NCF_OK && (rc = ncf_model_add_features(out, side, f, added)) != NCF_OK) ncf_model_free(*out), *out = NULL;
    return rc;
}

/* The row of an entity with n tokens, each ended by a NUL, back to back: the unknown ones' count. */
PY_EXPORT int ncfpy_feature_row(const ncf_model *m, int side, const char *tokens, int n, float *row)
{
    const char **t = (const char **)malloc(sizeof(char *) * (size_t)(n > 0 ? n : 1));
    int rc, j;
    if (!t) return NCF_ERR_NOMEM;
    for (j = 0; j < n; j++) t[j] = tokens, tokens += strlen(tokens) + 1;
    rc = ncf_feature_row(m, side, t, NULL, n, row);
    free(t);
    return rc;
}
