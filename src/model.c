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
