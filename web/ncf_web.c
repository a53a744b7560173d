/* ncf_web.c - ncf.h's serving half as a WebAssembly module (make wasm builds ncf.wasm). The
   page (index.html) copies a model file into the module's memory, where it is read in place
   (ncf_model_open), then asks for a user's top k, or for the top k of a new user given by a
   few items (folded in: ncf_fold_in). Every answer is JSON text in the module's memory, the
   scores also as their float bits, so that a test can compare them with a host build's.

   Built natively with -DWEB_HOST_MAIN, the same file prints the answers the module gives, for
   the tests that compare the two: host MODEL.ncf [USERS] */
#define NCF_INFERENCE_ONLY
#define NCF_NO_STDIO
#define NCF_IMPLEMENTATION
#include "../ncf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__wasm__)
#define WEB_EXPORT(name) __attribute__((export_name(#name)))
#else
#define WEB_EXPORT(name)
#endif

#define MAX_K 100
#define MAX_ITEMS 64 /* a new user's items */

static ncf_model *g_model;
static void *g_file; /* the model file's bytes: the model reads them in place */
/* The longest answer: an id is at most NCF_MAX_ID_BYTES, each byte escaped in at most 6; a
   list holds MAX_K ids with a score and its bits each, web_open 16 user and 16 item ids. */
#define ID_JSON (6 * NCF_MAX_ID_BYTES + 4)
static char g_out[MAX_K * (ID_JSON + 40) + 32 * ID_JSON + 1024];
static size_t g_at;

/* ---- JSON into g_out (sized above for the longest answer) ---- */
static void put(const char *fmt, ...)
{
    va_list ap;
    int n;
    if (g_at >= sizeof g_out) return;
    va_start(ap, fmt);
    n = vsnprintf(g_out + g_at, sizeof g_out - g_at, fmt, ap);
    va_end(ap);
    g_at = n < 0 ? sizeof g_out : g_at + (size_t)n;
}

/* A JSON string: quotes, backslashes and control bytes escaped. */
static void put_string(const char *s)
{
    put("\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') put("\\%c", c);
        else if (c < 32) put("\\u%04x", c);
        else put("%c", c);
    }
    put("\"");
}

static const char *fail(const char *what)
{
    g_at = 0;
    put("{\"error\":");
    put_string(what);
    put("}");
    return g_out;
}

/* items[0..n) with their scores: ids, scores and the scores' bits. */
static void put_list(const int32_t *items, const float *scores, int n)
{
    char id[NCF_MAX_ID_BYTES + 1];
    int j;
    put("\"items\":[");
    for (j = 0; j < n; j++) {
        if (ncf_id(g_model, NCF_ITEM, items[j], id, sizeof id) < 0) strcpy(id, "?");
        put(j ? "," : ""), put_string(id);
    }
    put("],\"scores\":[");
    for (j = 0; j < n; j++) put("%s%.6g", j ? "," : "", (double)scores[j]);
    put("],\"bits\":[");
    for (j = 0; j < n; j++) {
        uint32_t b;
        memcpy(&b, &scores[j], 4);
        put("%s\"%08lx\"", j ? "," : "", (unsigned long)b);
    }
    put("]");
}

static const char *model_type(ncf_model_type t)
{
    return t == NCF_NEUMF ? "NeuMF" : t == NCF_GMF ? "GMF" : t == NCF_MLP ? "MLP" : "MF";
}

static int clamp_k(int k) { return k < 1 ? 1 : k > MAX_K ? MAX_K : k; }

/* ---- the module's calls ---- */

/* Memory for the page to copy a file into (8-byte aligned, as ncf_model_open wants). */
WEB_EXPORT(web_alloc) void *web_alloc(size_t n) { return malloc(n ? n : 1); }
WEB_EXPORT(web_free) void web_free(void *p) { free(p); }

/* The first (up to) 16 user or item ids, as a JSON list. */
static int put_ids(int items)
{
    char id[NCF_MAX_ID_BYTES + 1];
    int j, n = items ? g_model->cfg.num_items : g_model->cfg.num_users;
    put(items ? "\"item_ids\":[" : "\"user_ids\":[");
    for (j = 0; j < n && j < 16; j++) {
        if ((items ? ncf_id(g_model, NCF_ITEM, j, id, sizeof id) : ncf_id(g_model, NCF_USER, j, id, sizeof id)) < 0)
            return 0;
        put(j ? "," : ""), put_string(id);
    }
    put("]");
    return 1;
}

/* Closes the model open, freeing it and its file (web_open does too, but the page calls it
   first, so a large file finds the room the old one held). */
WEB_EXPORT(web_close) void web_close(void)
{
    ncf_model_free(g_model), free(g_file);
    g_model = NULL, g_file = NULL;
}

/* Opens the model file in buf[0..n) (from web_alloc; the module owns it from here) in place.
   Answers the model's shape and its first user and item ids, or an error. */
WEB_EXPORT(web_open) const char *web_open(void *buf, size_t n)
{
    web_close();
    if (ncf_model_open(&g_model, buf, n, 0) != NCF_OK) {
        free(buf);
        return fail(ncf_error_text());
    }
    g_file = buf;
    g_at = 0;
    put("{\"model\":\"%s\",\"users\":%d,\"items\":%d,\"parameters\":%lu,\"epoch\":%ld,\"bytes\":%lu,",
        model_type(g_model->cfg.model), g_model->cfg.num_users, g_model->cfg.num_items,
        (unsigned long)g_model->num_params, (long)g_model->epoch, (unsigned long)n);
    if (!put_ids(0) || (put(","), !put_ids(1))) return fail(ncf_error_text());
    put("}");
    return g_out;
}

/* User index u's id as the data wrote it (NUL-terminated text, not JSON), or "". */
WEB_EXPORT(web_user_id) const char *web_user_id(int u)
{
    if (!g_model || ncf_id(g_model, NCF_USER, u, g_out, sizeof g_out) < 0) g_out[0] = 0;
    return g_out;
}

/* The k best items the user (an id as the data wrote it) has not rated. */
WEB_EXPORT(web_recommend) const char *web_recommend(const char *user, int k)
{
    ncf_rec_opts o = ncf_rec_opts_default();
    int32_t items[MAX_K];
    float scores[MAX_K];
    int u, n;
    if (!g_model) return fail("no model is open");
    if ((u = ncf_find(g_model, NCF_USER, user)) < 0) return fail(ncf_error_text());
    o.k = clamp_k(k);
    if ((n = ncf_recommend_index(g_model, u, &o, items, scores)) < 0) return fail(ncf_error_text());
    g_at = 0;
    put("{\"user\":"), put_string(user), put(",");
    put_list(items, scores, n);
    put("}");
    return g_out;
}

/* A new user given by item ids (one a line): its rows folded in, then its k best items
   other than those. */
WEB_EXPORT(web_fold_in) const char *web_fold_in(const char *lines, int k)
{
    ncf_fold_opts fo = ncf_fold_opts_default();
    ncf_rec_opts o = ncf_rec_opts_default();
    int32_t given[MAX_ITEMS], items[MAX_K];
    float scores[MAX_K], *row;
    char id[NCF_MAX_ID_BYTES + 1];
    int n = 0, got;
    if (!g_model) return fail("no model is open");
    while (*lines) {
        size_t len = strcspn(lines, "\n");
        int i;
        if (len && n == MAX_ITEMS) return fail("more than 64 items");
        if (len > NCF_MAX_ID_BYTES) return fail("an item id longer than 256 bytes");
        memcpy(id, lines, len), id[len] = 0;
        lines += len + (lines[len] == '\n');
        if (!len) continue;
        if ((i = ncf_find(g_model, NCF_ITEM, id)) < 0) return fail(ncf_error_text());
        given[n++] = i;
    }
    if (!n) return fail("no items given");
    if (!(row = (float *)malloc(sizeof(float) * (size_t)ncf_row_size(g_model)))) return fail("out of memory");
    o.k = clamp_k(k);
    o.user_row = row, o.exclude_rated = 0, o.deny = given, o.num_deny = n;
    got = ncf_fold_in(g_model, NCF_USER, given, n, &fo, row);
    if (got == NCF_OK) got = ncf_recommend_index(g_model, 0, &o, items, scores);
    free(row);
    if (got < 0) return fail(ncf_error_text());
    g_at = 0;
    put("{\"new_user_items\":%d,", n);
    put_list(items, scores, got);
    put("}");
    return g_out;
}

#ifdef WEB_HOST_MAIN
/* The host's answers, one line each, for the tests to compare the module's with: the model,
   the top 10 of its first USERS users, and of a new user given by ITEMS (comma-separated;
   default: the first two items). */
int main(int argc, char **argv)
{
    FILE *f;
    long len;
    void *buf;
    char id[NCF_MAX_ID_BYTES + 1], given[1024];
    int u, users = argc > 2 ? atoi(argv[2]) : 16;
    size_t l, k;
    if (argc < 2 || !(f = fopen(argv[1], "rb"))) {
        fprintf(stderr, "usage: host MODEL.ncf [USERS [ITEMS]]\n");
        return 2;
    }
    fseek(f, 0, SEEK_END), len = ftell(f), fseek(f, 0, SEEK_SET);
    buf = web_alloc((size_t)len);
    if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len) return 1;
    fclose(f);
    printf("%s\n", web_open(buf, (size_t)len));
    if (!g_model) return 1;
    for (u = 0; u < users && u < g_model->cfg.num_users; u++) {
        ncf_id(g_model, NCF_USER, u, id, sizeof id);
        printf("%s\n", web_recommend(id, 10));
    }
    if (argc > 3) {
        if (snprintf(given, sizeof given, "%s", argv[3]) >= (int)sizeof given)
            return fprintf(stderr, "ids too long\n"), 1;
        for (k = 0; given[k]; k++) given[k] = given[k] == ',' ? '\n' : given[k];
    } else {
        ncf_id(g_model, NCF_ITEM, 0, given, sizeof given);
        l = strlen(given), given[l] = '\n';
        ncf_id(g_model, NCF_ITEM, 1, given + l + 1, sizeof given - l - 1);
    }
    printf("%s\n", web_fold_in(given, 10));
    ncf_model_free(g_model), free(g_file);
    return 0;
}
#endif
