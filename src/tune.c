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
