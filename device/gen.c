/* gen.c - the host half of `make device`: trains the device example's model (NeuMF, factors 8,
   1,000 users x 2,000 items of synthetic data), saves it (MODEL.ncf, for serving: no Adam
   state) and writes into expect.h the host's top-10 for some users from it and from its int8
   form, which the device checks its own answers against. demo --export_c turns MODEL.ncf into
   the C arrays the firmware serves. Host build: cc -O2 -I.. gen.c -o gen -lm
   Run: gen MODEL.ncf expect.h */
#define NCF_IMPLEMENTATION
#include "ncf.h"

#include <stdio.h>
#include <string.h>

#define USERS 1000
#define ITEMS 2000
#define CHECKED 16 /* users whose top-10 the device checks */

static int put_expected(FILE *f, ncf_model *m, const ncf_dataset *d, const char *name)
{
    int u, j;
    fprintf(f, "static const struct expect %s[%d] = {\n", name, CHECKED);
    for (u = 0; u < CHECKED; u++) {
        int64_t user = d->raw_user[u * (USERS / CHECKED)], items[10];
        float scores[10];
        if (ncf_recommend(m, user, NULL, items, scores) != 10) return 0; /* (the 10 best not rated) */
        fprintf(f, "    {%lld, {", (long long)user);
        for (j = 0; j < 10; j++) fprintf(f, "%lld%s", (long long)items[j], j < 9 ? ", " : "}, {");
        for (j = 0; j < 10; j++) {
            uint32_t bits;
            memcpy(&bits, &scores[j], 4);
            fprintf(f, "0x%08lxu%s", (unsigned long)bits, j < 9 ? ", " : "}},\n");
        }
    }
    fprintf(f, "};\n");
    return 1;
}

int main(int argc, char **argv)
{
    ncf_dataset d;
    ncf_config c = ncf_config_default();
    ncf_model *m = NULL, *q = NULL;
    ncf_sampler s;
    void *i8 = NULL;
    size_t l8 = 0;
    FILE *f;
    int e, ok;
    if (argc != 3) {
        fprintf(stderr, "usage: gen MODEL.ncf expect.h\n");
        return 2;
    }
    ncf_set_threads(1);
    ok = ncf_synthetic(&d, USERS, ITEMS, 50000, 16, 1) == NCF_OK;
    c.num_users = d.num_users, c.num_items = d.num_items;
    ok = ok && ncf_model_create(&m, &c) == NCF_OK && ncf_sampler_init(&s, &d, c.num_neg, c.seed) == NCF_OK;
    for (e = 1; ok && e <= 4; e++) ok = ncf_train_epoch(m, &s, e, NULL, NULL, NULL) == NCF_OK;
    ok = ok && ncf_model_set_ids(m, &d) == NCF_OK && ncf_save(m, argv[1], NCF_SAVE_MODEL) == NCF_OK &&
        ncf_save_mem(m, NCF_SAVE_INT8, &i8, &l8) == NCF_OK && ncf_load_mem(&q, i8, l8) == NCF_OK;
    if (!ok) {
        fprintf(stderr, "gen: %s\n", ncf_error_text());
        return 1;
    }
    if (!(f = fopen(argv[2], "w"))) {
        perror(argv[2]);
        return 1;
    }
    fprintf(f, "/* written by gen.c: NeuMF factors 8, %d users x %d items, %lu parameters */\n", d.num_users,
            d.num_items, (unsigned long)m->num_params);
    fprintf(f, "struct expect { long long user, items[10]; unsigned long score_bits[10]; };\n");
    ok = put_expected(f, m, &d, "expect_f32") && put_expected(f, q, &d, "expect_int8");
    fprintf(f, "#define CHECKED %d\n", CHECKED);
    if (fclose(f) != 0 || !ok) {
        fprintf(stderr, "gen: cannot write %s\n", argv[2]);
        return 1;
    }
    printf("model: %d users x %d items, %lu parameters; saved %s\n", d.num_users, d.num_items,
           (unsigned long)m->num_params, argv[1]);
    ncf_free(i8), ncf_model_free(m), ncf_model_free(q), ncf_dataset_free(&d);
    return 0;
}
