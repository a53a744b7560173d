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
