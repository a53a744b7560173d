/* tests/test_logs.c - logs and files: every MovieLens format, delimited logs, ids as written, filters. Included by tests.c (one program). */
/* ---- >>formats: the MovieLens formats and the paper's split, read and refused ---------------- */

static const char *RATINGS_ROWS[] = {
    /* user item rating time */
    "7 10 5 100", "7 20 3 200", "7 30 4 150", "3 10 5 50",
    "3 40 1 60",  "9 30 2 10",  "9 20 2 10", /* same time: the later line is the test item */
    "5 10 4 10",                             /* one rating only: dropped with min_ratings 2 */
    "3 10 2 70",                             /* duplicate (3,10): the later one counts, and it is now user 3's latest */
};

static void write_ratings(const char *name, const char *sep, const char *header, const char *rating_fmt)
{
    char text[2048] = "";
    size_t k;
    if (header) strcat(text, header), strcat(text, "\n");
    for (k = 0; k < sizeof RATINGS_ROWS / sizeof *RATINGS_ROWS; k++) {
        int u, i, r, t;
        char line[128], rs[16];
        sscanf(RATINGS_ROWS[k], "%d %d %d %d", &u, &i, &r, &t);
        snprintf(rs, sizeof rs, rating_fmt, (double)r);
        snprintf(line, sizeof line, "%d%s%d%s%s%s%d\n", u, sep, i, sep, rs, sep, t);
        strcat(text, line);
    }
    write_file(name, text);
}

/* Users 3,7,9 -> 0,1,2; items 10,20,30,40 -> 0,1,2,3 (user 5 and nothing else dropped). */
static void check_hand_dataset_quiet(const ncf_dataset *d)
{
    CHECK(d->num_users == 3 && d->num_items == 4);
    if (d->num_users != 3 || d->num_items != 4) return;
    CHECK(d->raw_user[0] == 3 && d->raw_user[1] == 7 && d->raw_user[2] == 9);
    CHECK(d->raw_item[0] == 10 && d->raw_item[1] == 20 && d->raw_item[2] == 30 && d->raw_item[3] == 40);
    /* user 3: 10@50, 40@60, 10@70 -> (3,10) collapses to time 70, the latest: test 10, train {40} */
    CHECK(d->test_item[0] == 0);
    CHECK(d->user_ptr[1] - d->user_ptr[0] == 1 && d->items[d->user_ptr[0]] == 3);
    /* user 7: 10@100, 20@200, 30@150 -> test 20, train {10, 30} */
    CHECK(d->test_item[1] == 1);
    CHECK(d->user_ptr[2] - d->user_ptr[1] == 2 && d->items[d->user_ptr[1]] == 0 && d->items[d->user_ptr[1] + 1] == 2);
    /* user 9: 30@10 then 20@10 -> tie, the later line wins: test 20, train {30} */
    CHECK(d->test_item[2] == 1);
    CHECK(d->user_ptr[3] - d->user_ptr[2] == 1 && d->items[d->user_ptr[2]] == 2);
    CHECK(d->num_train == 4);
    CHECK(d->train_user[0] == 0 && d->train_user[1] == 1 && d->train_user[2] == 1 && d->train_user[3] == 2);
}

static void check_hand_dataset(const ncf_dataset *d, const char *what)
{
    printf("    %s\n", what);
    check_hand_dataset_quiet(d);
}

static void test_every_movielens_format_loads_the_same_data(void)
{
    ncf_dataset d;
    ncf_dataset_opts o = ncf_dataset_opts_default();
    o.min_ratings = 2;
    o.eval_negatives = 1;
    write_ratings("ratings.dat", "::", NULL, "%.0f");
    write_ratings("ratings.csv", ",", "userId,movieId,rating,timestamp", "%.1f");
    write_ratings("u.data", "\t", NULL, "%.0f");
    write_ratings("ratings.txt", "\t", NULL, "%.0f");
    CHECK(ncf_load_dataset(&d, path_in_dir("ratings.dat"), &o) == NCF_OK);
    check_hand_dataset(&d, "ratings.dat (user::item::rating::time)");
    CHECK(d.num_eval_neg == 1);
    ncf_dataset_free(&d);
    CHECK(ncf_load_dataset(&d, path_in_dir("ratings.csv"), &o) == NCF_OK);
    check_hand_dataset(&d, "ratings.csv (header, decimal ratings)");
    ncf_dataset_free(&d);
    CHECK(ncf_load_dataset(&d, path_in_dir("u.data"), &o) == NCF_OK);
    check_hand_dataset(&d, "u.data (tab separated)");
    ncf_dataset_free(&d);
    CHECKF(ncf_load_dataset(&d, path_in_dir("ratings.txt"), &o) == NCF_OK, "%s", ncf_error_text());
    check_hand_dataset(&d, "ratings.txt, TAB found from its lines");
    ncf_dataset_free(&d);
    o.format = NCF_FORMAT_TAB; /* the override */
    CHECK(ncf_load_dataset(&d, path_in_dir("ratings.txt"), &o) == NCF_OK);
    check_hand_dataset(&d, "ratings.txt with the format given");
    ncf_dataset_free(&d);
    o.format = NCF_FORMAT_AUTO;
    o.min_ratings = 0; /* user 5 stays: 4 users, and its only rating stays in training (nothing held out) */
    CHECK(ncf_load_dataset(&d, path_in_dir("ratings.dat"), &o) == NCF_OK);
    CHECK(d.num_users == 4 && d.raw_user[1] == 5 && d.test_item[1] == -1 && d.user_ptr[2] == d.user_ptr[1] + 1 &&
          d.items[d.user_ptr[1]] == 0);
    ncf_dataset_free(&d);
    o.min_ratings = 3; /* users 3 and 7 (3 ratings each, counted before collapsing) */
    CHECK(ncf_load_dataset(&d, path_in_dir("ratings.dat"), &o) == NCF_OK);
    CHECK(d.num_users == 2 && d.num_items == 4 && d.raw_user[0] == 3 && d.raw_user[1] == 7);
    ncf_dataset_free(&d);
    o.min_ratings = 4; /* nobody */
    CHECK_ERR(ncf_load_dataset(&d, path_in_dir("ratings.dat"), &o), NCF_ERR_DATA, "no user has at least 4 ratings");
    ncf_dataset_free(&d);
}

/* Writes d as the paper's three files under PREFIX. */
static void write_ncf_split(const ncf_dataset *d, const char *prefix)
{
    char p[300];
    FILE *f;
    int u, j;
    int64_t k;
    snprintf(p, sizeof p, "%s.train.rating", prefix);
    f = fopen(p, "w");
    for (u = 0; u < d->num_users; u++)
        for (k = d->user_ptr[u]; k < d->user_ptr[u + 1]; k++) fprintf(f, "%d\t%d\t1\t0\n", u, d->items[k]);
    fclose(f);
    snprintf(p, sizeof p, "%s.test.rating", prefix);
    f = fopen(p, "w");
    for (u = 0; u < d->num_users; u++) fprintf(f, "%d\t%d\t5\t978824330\n", u, d->test_item[u]);
    fclose(f);
    snprintf(p, sizeof p, "%s.test.negative", prefix);
    f = fopen(p, "w");
    for (u = 0; u < d->num_users; u++) {
        fprintf(f, "(%d,%d)", u, d->test_item[u]);
        for (j = 0; j < d->num_eval_neg; j++) fprintf(f, "\t%d", d->eval_neg[(size_t)u * d->num_eval_neg + j]);
        fprintf(f, "\n");
    }
    fclose(f);
}

/* ratings.csv columns are read by name, in any order and with extra columns; a UTF-8 byte
   order mark is skipped in every format; a headerless file keeps its first rating whatever it
   starts with; an unknown header is refused with the columns expected. */
static void test_columns_read_by_header_name_and_bom_skipped(void)
{
    ncf_dataset d;
    ncf_dataset_opts o = ncf_dataset_opts_default();
    char text[2048], line[128];
    size_t k;
    o.min_ratings = 2, o.eval_negatives = 1;
    /* movieId first: users and items must not swap */
    strcpy(text, "movieId,genre,userId,timestamp,rating\n");
    for (k = 0; k < sizeof RATINGS_ROWS / sizeof *RATINGS_ROWS; k++) {
        int u, i, r, tm;
        sscanf(RATINGS_ROWS[k], "%d %d %d %d", &u, &i, &r, &tm);
        snprintf(line, sizeof line, "%d,Drama,%d,%d,%d.5\n", i, u, tm, r);
        strcat(text, line);
    }
    write_file("swapped.csv", text);
    CHECKF(ncf_load_dataset(&d, path_in_dir("swapped.csv"), &o) == NCF_OK, "%s", ncf_error_text());
    check_hand_dataset(&d, "movieId,genre,userId,timestamp,rating by name");
    ncf_dataset_free(&d);
    write_ratings("alias.csv", ",", "\xEF\xBB\xBF\"user_id\",\"item_id\",\"rating\",\"timestamp\"", "%.0f");
    CHECKF(ncf_load_dataset(&d, path_in_dir("alias.csv"), &o) == NCF_OK, "%s", ncf_error_text());
    check_hand_dataset(&d, "a BOM, then \"user_id\",\"item_id\",...");
    ncf_dataset_free(&d);
    write_ratings("bare.csv", ",", NULL, "%.0f"); /* no header: the first line is a rating */
    memcpy(text, "\xEF\xBB\xBF", 3);
    write_ratings("bom.dat", "::", NULL, "%.0f");
    {
        FILE *f = fopen(path_in_dir("bom.dat"), "rb");
        size_t n = f ? fread(text + 3, 1, sizeof text - 4, f) : 0;
        if (f) fclose(f);
        text[3 + n] = 0;
        write_file("bom.dat", text);
    }
    CHECKF(ncf_load_dataset(&d, path_in_dir("bom.dat"), &o) == NCF_OK, "%s", ncf_error_text());
    check_hand_dataset(&d, "ratings.dat with a BOM");
    ncf_dataset_free(&d);
    CHECKF(ncf_load_dataset(&d, path_in_dir("bare.csv"), &o) == NCF_OK, "%s", ncf_error_text());
    check_hand_dataset(&d, "ratings.csv without a header");
    ncf_dataset_free(&d);
    write_file("space.csv", " 9,20,2,10\n9,30,2,5\n3,10,5,50\n3,40,1,60\n");
    CHECKF(ncf_load_dataset(&d, path_in_dir("space.csv"), &o) == NCF_OK && d.num_users == 2 && d.num_train == 2,
           "the first rating was lost: %d users, %lld positives", d.num_users, (long long)d.num_train);
    ncf_dataset_free(&d);
    write_file("unknown.csv", "who,what,when\n1,2,3\n");
    CHECK_ERR(ncf_load_dataset(&d, path_in_dir("unknown.csv"), &o), NCF_ERR_PARSE,
              "unknown.csv:1: no user column in the header 'who,what,when' (names tried: user userid");
    o.columns[NCF_COL_USER] = "who", o.columns[NCF_COL_ITEM] = "2"; /* by name and by number: loads */
    CHECK_ERR(ncf_load_dataset(&d, path_in_dir("unknown.csv"), &o), NCF_ERR_DATA,
              "unknown.csv: no user has at least 2 ratings");
}

static void test_paper_split_files_read_back_the_same_dataset(void)
{
    ncf_dataset a, b;
    char prefix[256];
    snprintf(prefix, sizeof prefix, "%s/toy", g_dir);
    CHECK(ncf_synthetic(&a, 120, 80, 2400, 6, 5) == NCF_OK);
    CHECK(ncf_sample_eval_negatives(&a, 20, 5) == NCF_OK);
    write_ncf_split(&a, prefix);
    CHECK(ncf_load_dataset(&b, prefix, NULL) == NCF_OK);
    CHECK(a.num_users == b.num_users && a.num_items == b.num_items && a.num_train == b.num_train);
    CHECK(b.num_eval_neg == 20);
    if (a.num_users == b.num_users && a.num_train == b.num_train && b.num_eval_neg == 20) {
        CHECK(!memcmp(a.user_ptr, b.user_ptr, sizeof(int64_t) * (size_t)(a.num_users + 1)));
        CHECK(!memcmp(a.items, b.items, sizeof(int32_t) * (size_t)a.num_train));
        CHECK(!memcmp(a.test_item, b.test_item, sizeof(int32_t) * (size_t)a.num_users));
        CHECK(!memcmp(a.eval_neg, b.eval_neg, sizeof(int32_t) * (size_t)a.num_users * 20));
    }
    ncf_dataset_free(&b);
    /* any of the three names also works, and sampled negatives replace the file's */
    {
        char p[300];
        ncf_dataset_opts o = ncf_dataset_opts_default();
        o.eval_negatives = 30;
        snprintf(p, sizeof p, "%s.test.negative", prefix);
        CHECK(ncf_load_dataset(&b, p, &o) == NCF_OK);
        CHECK(b.num_eval_neg == 30 && b.num_train == a.num_train);
        ncf_dataset_free(&b);
    }
    ncf_dataset_free(&a);
}

static void test_bad_input_files_refused_with_file_and_line(void)
{
    ncf_dataset d;
    char prefix[256];
    static const struct {
        const char *name, *text;
        int code;
        const char *message;
    } bad[] = {
        {"trunc.dat", "1::10::5::100\n1::20::3\n", NCF_ERR_PARSE,
         "trunc.dat:2: expected 4 fields separated by '::', got 3"},
        {"rating.csv", "userId,movieId,rating,timestamp\n1,10,x,100\n", NCF_ERR_PARSE,
         "rating.csv:2: rating 'x' is not a number"},
        {"ragged.csv", "user,item,rating\n1,10,5\n1,20\n", NCF_ERR_PARSE,
         "ragged.csv:3: expected 3 fields separated by ',', got 2"},
        {"quote.csv", "user,item\n1,\"10\n2,20\n", NCF_ERR_PARSE, "quote.csv:2: a quote opened here is never closed"},
        {"emptyid.csv", "user,item\n1,10\n,20\n", NCF_ERR_PARSE, "emptyid.csv:3: empty user id"},
        {"emptyitem.csv", "user,item\nu1,10\nu1,\"\"\n", NCF_ERR_PARSE, "emptyitem.csv:3: empty item id"},
        {"nocol.tsv", "visitor\twhat\n1\t2\n", NCF_ERR_PARSE,
         "nocol.tsv:1: no item column in the header 'visitor\\x09what'"},
        {"onefield.txt", "1\n2\n", NCF_ERR_PARSE, "onefield.txt:1: one field a line"},
        {"ts.dat", "1::10::5::9223372036854775807\n1::20::5::9223372036854775808\n", NCF_ERR_PARSE,
         "ts.dat:2: timestamp '9223372036854775808' is out of range"},
        {"tsneg.dat", "1::10::5::-9223372036854775808\n", NCF_ERR_PARSE,
         "tsneg.dat:1: timestamp '-9223372036854775808' is out of range (timestamps lie strictly between"},
        {"empty.dat", "", NCF_ERR_PARSE, "empty.dat: no ratings"},
        {"header_only.csv", "userId,movieId,rating,timestamp\n", NCF_ERR_PARSE, "no ratings"},
    };
    size_t k;
    for (k = 0; k < sizeof bad / sizeof *bad; k++) {
        write_file(bad[k].name, bad[k].text);
        CHECK_ERR(ncf_load_dataset(&d, path_in_dir(bad[k].name), NULL), bad[k].code, bad[k].message);
    }
    CHECK_ERR(ncf_load_dataset(&d, path_in_dir("missing.dat"), NULL), NCF_ERR_IO, "missing.dat: cannot open");
    { /* a column that is both the rating and the strength is named as the strength it is used as */
        ncf_dataset_opts so = ncf_dataset_opts_default();
        so.weighting = NCF_WEIGHT_LINEAR, so.header = NCF_HEADER_NO, so.sep = "\t";
        so.columns[NCF_COL_RATING] = so.columns[NCF_COL_STRENGTH] = "3";
        write_file("nanstrength.tsv", "1\t10\t2\n1\t11\tnan\n");
        CHECK_ERR(ncf_load_dataset(&d, path_in_dir("nanstrength.tsv"), &so), NCF_ERR_PARSE,
                  "nanstrength.tsv:2: strength 'nan' is not a number");
    }
    { /* a time split that holds every positive out says so, not the sampler later */
        ncf_dataset_opts so = ncf_dataset_opts_default();
        so.holdout = NCF_HOLDOUT_CUTOFF, so.holdout_cutoff = 0, so.validation = 0;
        write_file("allout.csv",
                   "user,item,rating,timestamp\n1,10,5,100\n1,11,5,200\n2,12,5,300\n2,13,5,400\n3,14,5,500\n");
        CHECK_ERR(ncf_load_dataset(&d, path_in_dir("allout.csv"), &so), NCF_ERR_DATA,
                  "the time split holds every one of the 5 positives out");
    }
    /* the paper split: a negative line whose (user,item) is not its test line */
    write_file("bad.train.rating", "0\t1\t1\t0\n1\t2\t1\t0\n");
    write_file("bad.test.rating", "0\t3\t1\t0\n1\t4\t1\t0\n");
    write_file("bad.test.negative", "(0,3)\t5\t6\n(1,5)\t6\t7\n");
    snprintf(prefix, sizeof prefix, "%s/bad", g_dir);
    CHECK_ERR(ncf_load_dataset(&d, prefix, NULL), NCF_ERR_DATA, "bad.test.negative:2: (1,5) does not match line 2");
    write_file("bad.test.negative", "(0,3)\t5\t6\n(1,4)\t6\n");
    CHECK_ERR(ncf_load_dataset(&d, prefix, NULL), NCF_ERR_PARSE,
              "bad.test.negative:2: 1 negatives, but the first line has 2");
    write_file("bad.test.rating", "0\t3\t1\t0\n");
    CHECK_ERR(ncf_load_dataset(&d, prefix, NULL), NCF_ERR_DATA, "user 1 has no line in");
    /* found by fuzz/fuzz.c: a malformed .test.rating was freed twice */
    write_file("bad.test.rating", "0\t3\t1\t0\n1\t4\n");
    CHECK_ERR(ncf_load_dataset(&d, prefix, NULL), NCF_ERR_PARSE, "bad.test.rating:2: expected 4 fields");
    /* the split's ids are dense: a huge id is refused before anything is sized by it */
    write_file("bad.test.rating", "0\t3\t1\t0\n1\t4\t1\t0\n");
    write_file("bad.train.rating", "0\t1\t1\t0\n4000000000\t2\t1\t0\n");
    CHECK_ERR(ncf_load_dataset(&d, prefix, NULL), NCF_ERR_DATA, "ids must be 0-based and dense");
    write_file("bad.test.negative", "(0,3)\t5\t6\n(1,4)\t6\t7\n");
    write_file("bad.train.rating", "0\t1\t1\t0\n1\t2000000000\t1\t0\n");
    CHECK_ERR(ncf_load_dataset(&d, prefix, NULL), NCF_ERR_DATA, "item id 2000000000 is beyond");
    /* every item rated: no eval negative exists, and none for the sampler */
    write_file("full.dat", "1::10::5::1\n1::20::5::2\n2::10::5::1\n2::30::5::2\n");
    CHECK_ERR(ncf_load_dataset(&d, path_in_dir("full.dat"), NULL), NCF_ERR_DATA, "full.dat: user 1 rated 2 of 3 items");
    {
        ncf_dataset_opts o = ncf_dataset_opts_default();
        ncf_sampler s;
        o.eval_negatives = 1;
        /* a user who rated every item is dropped, and the items only it rated; then no user left
           rated every item left */
        write_file("full.dat",
                   "1::10::5::1\n1::20::5::2\n1::30::5::3\n1::40::5::4\n2::10::5::1\n2::20::5::2\n"
                   "3::30::5::1\n3::10::5::2\n");
        CHECKF(ncf_load_dataset(&d, path_in_dir("full.dat"), &o) == NCF_OK, "%s", ncf_error_text());
        CHECK(d.num_users == 2 && d.num_items == 3 && d.report.users_every_item == 1 &&
              d.report.items_few_ratings == 1);
        CHECK(d.raw_user && d.raw_user[0] == 2 && d.raw_item && d.raw_item[2] == 30);
        CHECK(ncf_sampler_init(&s, &d, 4, 1) == NCF_OK);
        ncf_dataset_free(&d);
        /* each drop can leave another user with every item left: when none is left, the load says so */
        write_file("full.dat", "1::10::5::1\n1::20::5::2\n1::30::5::3\n2::10::5::1\n2::30::5::2\n");
        CHECK_ERR(ncf_load_dataset(&d, path_in_dir("full.dat"), &o), NCF_ERR_DATA,
                  "no user is left who did not rate every item");
        CHECK_ERR(ncf_dataset_from_triples(&d, (int64_t[]){1, 1, 1}, (int64_t[]){10, 20, 30}, NULL, 3, 0), NCF_ERR_DATA,
                  "(1 dropped so)");
        (void)s;
    }
    CHECK(d.user_ptr == NULL && d.num_users == 0); /* failures leave the dataset empty */
}

/* ---- >>logs: any delimited log, ids as written, strengths, filters, hold-outs ---------------- */

/* RATINGS_ROWS as a log: sep between fields, eol after each line, an optional header, every
   field quoted when quote is set. Returns its length. */
static size_t ratings_log(char *out, const char *sep, const char *eol, int header, int quote)
{
    static const char *names[4] = {"user_id", "item_id", "rating", "timestamp"};
    const char *q = quote ? "\"" : "";
    size_t k, n = 0;
    int f;
    out[0] = 0;
    if (header) {
        for (f = 0; f < 4; f++) n += (size_t)sprintf(out + n, "%s%s%s%s", f ? sep : "", q, names[f], q);
        n += (size_t)sprintf(out + n, "%s", eol);
    }
    for (k = 0; k < sizeof RATINGS_ROWS / sizeof *RATINGS_ROWS; k++) {
        int v[4];
        sscanf(RATINGS_ROWS[k], "%d %d %d %d", &v[0], &v[1], &v[2], &v[3]);
        for (f = 0; f < 4; f++) n += (size_t)sprintf(out + n, "%s%s%d%s", f ? sep : "", q, v[f], q);
        n += (size_t)sprintf(out + n, "%s", eol);
    }
    return n;
}

static void test_logs_read_with_any_separator_quoting_line_end_and_header(void)
{
    static const char *seps[6] = {",", ";", "\t", "|", "::", " "}, *eols[3] = {"\n", "\r\n", "\r"};
    char text[2048];
    ncf_dataset d;
    ncf_dataset_opts o = ncf_dataset_opts_default();
    int s, e, h, q, loaded = 0, tried = 0;
    o.min_ratings = 2, o.eval_negatives = 1;
    for (s = 0; s < 6; s++)
        for (e = 0; e < 3; e++)
            for (h = 0; h < 2; h++)
                for (q = 0; q < 2; q++) {
                    size_t n = ratings_log(text, seps[s], eols[e], h, q);
                    int before = g_failed_checks;
                    tried++;
                    if (ncf_load_dataset_mem(&d, "log", text, n, &o) != NCF_OK) {
                        CHECKF(0, "sep '%s' eol %d header %d quotes %d: %s", seps[s], e, h, q, ncf_error_text());
                        continue;
                    }
                    CHECKF(!strcmp(d.report.sep, seps[s]) && d.report.header == h,
                           "sep '%s' header %d: read as '%s' %d", seps[s], h, d.report.sep, d.report.header);
                    CHECK(!strcmp(d.report.columns[NCF_COL_USER], h ? "user_id" : "column 1"));
                    CHECK(!strcmp(d.report.columns[NCF_COL_TIME], h ? "timestamp" : "column 4"));
                    if (g_failed_checks == before) check_hand_dataset_quiet(&d);
                    loaded += g_failed_checks == before;
                    ncf_dataset_free(&d);
                }
    printf("    %d of %d logs (6 separators x LF, CRLF, CR x header or not x quoted or not) read as written\n", loaded,
           tried);
    /* a BOM, blank lines and trailing blanks; a file named .tsv */
    memcpy(text, "\xEF\xBB\xBF", 3);
    ratings_log(text + 3, "\t", "\n\n", 1, 0);
    write_file("plays.tsv", text);
    CHECKF(ncf_load_dataset(&d, path_in_dir("plays.tsv"), &o) == NCF_OK, "%s", ncf_error_text());
    check_hand_dataset(&d, "a .tsv with a BOM and blank lines");
    ncf_dataset_free(&d);
    /* a quoted field may hold the separator, a doubled quote and a line end */
    strcpy(text, "user,item,rating\n\"a,1\",\"x\"\"y\",1\n\"a,1\",\"multi\nline\",2\nb,\"x\"\"y\",3\nb,z,4\n");
    CHECKF(ncf_load_dataset_mem(&d, "quoted.csv", text, strlen(text), &o) == NCF_OK, "%s", ncf_error_text());
    {
        char id[64];
        CHECK(d.num_users == 2 && d.num_items == 3);
        CHECK(ncf_dataset_id(&d, NCF_USER, 0, id, sizeof id) == 3 && !strcmp(id, "a,1"));
        CHECK(ncf_dataset_find(&d, NCF_ITEM, "x\"y") >= 0 && ncf_dataset_find(&d, NCF_ITEM, "multi\nline") >= 0);
    }
    ncf_dataset_free(&d);
    strcpy(text, "user,item\n1,2\n1,3\n\"2,4\n"); /* the line of the open quote is named */
    CHECK_ERR(ncf_load_dataset_mem(&d, "open.csv", text, strlen(text), &o), NCF_ERR_PARSE,
              "open.csv:4: a quote opened");
}

static void test_columns_found_by_name_alias_or_number(void)
{
    ncf_dataset d;
    ncf_dataset_opts o = ncf_dataset_opts_default();
    char id[64];
    const char *books = "\"User-ID\";\"ISBN\";\"Book-Rating\"\r\n\"276725\";\"034545104X\";\"0\"\r\n"
                        "\"276725\";\"0155061224\";\"5\"\r\n\"276726\";\"0446520802\";\"0\"\r\n"
                        "\"276726\";\"034545104X\";\"7\"\r\n";
    const char *plays = "userID\tartistID\tweight\n2\t51\t13883\n2\t52\t11690\n3\t51\t228\n3\t53\t1021\n4\t52\t5\n";
    o.eval_negatives = 1;
    CHECKF(ncf_load_dataset_mem(&d, "BX-Book-Ratings.csv", books, strlen(books), &o) == NCF_OK, "%s", ncf_error_text());
    CHECK(!strcmp(d.report.sep, ";") && d.report.header == 1 && !strcmp(d.report.columns[0], "User-ID") &&
          !strcmp(d.report.columns[1], "ISBN") && !strcmp(d.report.columns[2], "Book-Rating") &&
          !d.report.columns[3][0]);
    CHECK(d.report.text_ids[0] == 0 && d.report.text_ids[1] == 1 && d.raw_user && !d.raw_item);
    CHECK(d.num_items == 3 && ncf_dataset_id(&d, NCF_ITEM, 0, id, sizeof id) == 10 && !strcmp(id, "0155061224"));
    CHECK(d.report.holdout == NCF_HOLDOUT_RANDOM); /* no timestamps */
    ncf_dataset_free(&d);
    CHECKF(ncf_load_dataset_mem(&d, "user_artists.dat", plays, strlen(plays), &o) == NCF_OK, "%s", ncf_error_text());
    CHECK(!strcmp(d.report.sep, "\t") && !strcmp(d.report.columns[1], "artistID") &&
          !strcmp(d.report.columns[2], "weight"));
    ncf_dataset_free(&d);
    /* asked for by name (case and punctuation ignored) or by number */
    o.columns[NCF_COL_USER] = "ARTISTid", o.columns[NCF_COL_ITEM] = "1", o.columns[NCF_COL_RATING] = "";
    CHECKF(ncf_load_dataset_mem(&d, "swap.tsv", plays, strlen(plays), &o) == NCF_OK, "%s", ncf_error_text());
    CHECK(d.num_users == 3 && d.num_items == 3 && d.raw_user[0] == 51 && !d.report.columns[2][0]);
    ncf_dataset_free(&d);
    o.columns[NCF_COL_ITEM] = "2";
    CHECK_ERR(ncf_load_dataset_mem(&d, "twice.tsv", plays, strlen(plays), &o), NCF_ERR_ARG,
              "column 2 is both the user id and the item id");
    o.columns[NCF_COL_ITEM] = "9";
    CHECK_ERR(ncf_load_dataset_mem(&d, "nine.tsv", plays, strlen(plays), &o), NCF_ERR_ARG,
              "item id column 9: the file has 3 columns");
    o.columns[NCF_COL_ITEM] = "song";
    CHECK_ERR(ncf_load_dataset_mem(&d, "song.tsv", plays, strlen(plays), &o), NCF_ERR_ARG, "no column named 'song'");
    o = ncf_dataset_opts_default(), o.eval_negatives = 1, o.header = NCF_HEADER_NO, o.columns[NCF_COL_USER] = "userID";
    CHECK_ERR(ncf_load_dataset_mem(&d, "nohead.tsv", plays, strlen(plays), &o), NCF_ERR_ARG,
              "has no header; give its number");
    o = ncf_dataset_opts_default(), o.eval_negatives = 1, o.sep = ";"; /* a separator given: one field a line */
    CHECK_ERR(ncf_load_dataset_mem(&d, "semi.tsv", plays, strlen(plays), &o), NCF_ERR_PARSE, "one field a line");
}

/* A log whose ids are not all plain integers: leading zeros, letters, a 64-hex-digit hash,
   bytes that are not UTF-8, and "7" beside "007". */
static void write_text_id_log(const char *name, int users, int items)
{
    FILE *f = fopen(path_in_dir(name), "wb");
    int u, k;
    for (u = 0; u < users; u++)
        for (k = 0; k < 12; k++) {
            int i = (u * 7 + k * k * 3 + (u % 5) * k) % items;
            char uid[32], iid[80];
            if (u == 0) strcpy(uid, "007");
            else if (u == 1) strcpy(uid, "7");
            else if (u == 2) strcpy(uid, "\xff\xfe-user");
            else snprintf(uid, sizeof uid, "u%02d", u);
            if (i == 0) strcpy(iid, "0440213320");
            else if (i == 1) strcpy(iid, "440213320");
            else if (i == 2) strcpy(iid, "034545104X");
            else if (i == 3) strcpy(iid, "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08");
            else snprintf(iid, sizeof iid, "%d", 1000 + i);
            fprintf(f, "%s,%s,%d\n", uid, iid, 1 + (u + k) % 5);
        }
    fclose(f);
}

/* An id is its field's bytes: a comma or a quote inside quotes, blanks at either end of an
   unquoted field, a TAB inside, bytes that are not UTF-8; through the load, the lookups, a model
   file and its id output. trim_ids drops the blanks (two ids then merge), and says how many. */
static void test_ids_keep_blanks_quotes_and_bytes_unless_trimmed(void)
{
    static const char *ids[] = {"Papers, Please", "Fallout 4 ", "Fallout 4", " Tetris",
                                "Say \"Hi\"",     "a\tb",       "\xff\xfe x"};
    const char *log = "user,item\n"
                      "u1,\"Papers, Please\"\nu1,Fallout 4 \nu1,Fallout 4\nu1, Tetris\nu1,\"Say \"\"Hi\"\"\"\nu1,a\tb\n"
                      "u2,\"Papers, Please\"  \nu2,\xff\xfe x\nu2,Fallout 4\nu2,z\nu3,  \"z\"\nu3, Tetris\nu3,a\tb\n";
    ncf_dataset_opts o = ncf_dataset_opts_default();
    ncf_dataset d;
    ncf_config c = ncf_config_default();
    ncf_model *m = NULL, *back = NULL;
    void *buf = NULL;
    size_t len = 0;
    char id[NCF_MAX_ID_BYTES + 1];
    int k, i;
    o.holdout = NCF_HOLDOUT_NONE;
    CHECK(ncf_load_dataset_mem(&d, "ids", log, strlen(log), &o) == NCF_OK);
    CHECK(d.num_items == 8 && d.report.blank_edged_ids[1] == 3 && d.report.blank_edged_ids[0] == 0);
    c.num_users = d.num_users, c.num_items = d.num_items;
    CHECK(ncf_model_create(&m, &c) == NCF_OK && ncf_model_set_ids(m, &d) == NCF_OK &&
          ncf_save_mem(m, NCF_SAVE_MODEL, &buf, &len) == NCF_OK && ncf_load_mem(&back, buf, len) == NCF_OK);
    for (k = 0; k < (int)(sizeof ids / sizeof *ids); k++) {
        i = ncf_dataset_find(&d, NCF_ITEM, ids[k]);
        CHECKF(i >= 0 && ncf_find(m, NCF_ITEM, ids[k]) == i && ncf_find(back, NCF_ITEM, ids[k]) == i, "'%s'", ids[k]);
        CHECKF(ncf_id(back, NCF_ITEM, i, id, sizeof id) == (int)strlen(ids[k]) && strcmp(id, ids[k]) == 0, "'%s'",
               ids[k]);
    }
    CHECK(ncf_find(back, NCF_ITEM, "Tetris") < 0 && ncf_find(back, NCF_ITEM, "Papers") < 0);
    ncf_model_free(m), ncf_model_free(back), ncf_free(buf), ncf_dataset_free(&d);
    o.trim_ids = 1;
    CHECK(ncf_load_dataset_mem(&d, "ids", log, strlen(log), &o) == NCF_OK);
    CHECK(d.num_items == 7 && d.report.blank_edged_ids[1] == 3 && d.report.duplicates == 1);
    CHECK(ncf_dataset_find(&d, NCF_ITEM, "Tetris") >= 0 && ncf_dataset_find(&d, NCF_ITEM, " Tetris") < 0 &&
          ncf_dataset_find(&d, NCF_ITEM, "Fallout 4 ") < 0 && ncf_dataset_find(&d, NCF_ITEM, "Papers, Please") >= 0);
    ncf_dataset_free(&d);
    o.trim_ids = 2;
    CHECK_ERR(ncf_load_dataset_mem(&d, "ids", log, strlen(log), &o), NCF_ERR_ARG, "trim_ids 2");
}

static void test_ids_kept_as_written_through_training_saving_and_serving(void)
{
    ncf_dataset d;
    ncf_model *m = NULL, *loaded = NULL, *in_place = NULL;
    ncf_sampler s;
    ncf_config c = ncf_config_default();
    ncf_dataset_opts o = ncf_dataset_opts_default();
    ncf_rec_opts ro = ncf_rec_opts_default();
    char id[NCF_MAX_ID_BYTES + 1];
    static const char *kept[] = {"0440213320", "440213320", "034545104X",
                                 "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "1004"};
    void *buf = NULL, *aligned = NULL;
    size_t len = 0;
    int32_t top[3][5];
    float sc[3][5], z[3];
    int k, u, n[3];
    o.eval_negatives = 5, o.seed = 3;
    write_text_id_log("ids.csv", 40, 30);
    CHECKF(ncf_load_dataset(&d, path_in_dir("ids.csv"), &o) == NCF_OK, "%s", ncf_error_text());
    if (d.num_users != 40) {
        CHECKF(0, "%d users", d.num_users);
        ncf_dataset_free(&d);
        return;
    }
    CHECK(d.user_text && d.item_text && !d.raw_user && !d.raw_item && d.num_items == 30);
    CHECK(ncf_dataset_find(&d, NCF_USER, "007") != ncf_dataset_find(&d, NCF_USER, "7") &&
          ncf_dataset_find(&d, NCF_USER, "7") >= 0);
    CHECK(ncf_dataset_find(&d, NCF_USER, "\xff\xfe-user") >= 0);
    CHECK_ERR(ncf_dataset_find(&d, NCF_USER, "07"), NCF_ERR_ARG, "unknown user '07'");
    for (k = 0; k < 5; k++) { /* each id found, and named back byte for byte */
        int i = ncf_dataset_find(&d, NCF_ITEM, kept[k]);
        CHECKF(i >= 0 && ncf_dataset_id(&d, NCF_ITEM, i, id, sizeof id) == (int)strlen(kept[k]) && !strcmp(id, kept[k]),
               "%s", kept[k]);
    }
    for (k = 1; k < d.num_items; k++) { /* ascending by bytes */
        char prev[NCF_MAX_ID_BYTES + 1];
        ncf_dataset_id(&d, NCF_ITEM, k - 1, prev, sizeof prev), ncf_dataset_id(&d, NCF_ITEM, k, id, sizeof id);
        CHECK(strcmp(prev, id) < 0);
    }
    CHECK_ERR(ncf_dataset_id(&d, NCF_ITEM, 3, id, 4), NCF_ERR_ARG, "buffer is too short");
    c.num_users = d.num_users, c.num_items = d.num_items;
    CHECK(ncf_model_create(&m, &c) == NCF_OK && ncf_model_set_ids(m, &d) == NCF_OK &&
          ncf_sampler_init(&s, &d, 4, 1) == NCF_OK);
    CHECK(ncf_train_epoch(m, &s, 1, NULL, NULL, NULL) == NCF_OK);
    CHECK(ncf_save_mem(m, NCF_SAVE_MODEL, &buf, &len) == NCF_OK && ncf_load_mem(&loaded, buf, len) == NCF_OK);
    aligned = malloc(len);
    if (aligned) memcpy(aligned, buf, len);
    CHECKF(aligned && ncf_model_open(&in_place, aligned, len, 0) == NCF_OK, "%s", ncf_error_text());
    if (!loaded || !in_place) goto done;
    u = ncf_find(m, NCF_USER, "007");
    for (k = 0; k < 3; k++) {
        const ncf_model *x = k == 0 ? m : k == 1 ? loaded : in_place;
        int32_t pu = ncf_find(x, NCF_USER, "007"), pi = ncf_find(x, NCF_ITEM, "034545104X");
        CHECK(ncf_find(x, NCF_USER, "007") == u &&
              ncf_find(x, NCF_ITEM, kept[3]) == ncf_dataset_find(&d, NCF_ITEM, kept[3]));
        ro.k = 5, n[k] = ncf_recommend_index(x, u, &ro, top[k], sc[k]);
        CHECK(pu >= 0 && pi >= 0 && ncf_predict_index(x, &pu, &pi, 1, &z[k]) == NCF_OK);
        CHECK(ncf_id(x, NCF_ITEM, top[k][0], id, sizeof id) > 0 && ncf_dataset_find(&d, NCF_ITEM, id) == top[k][0]);
        CHECK_ERR(recommend_k((ncf_model *)(uintptr_t)x, 7, 5, 1, (int64_t *)top, NULL), NCF_ERR_ARG,
                  "item ids are text");
    }
    CHECK(n[0] == 5 && n[1] == 5 && n[2] == 5 && !memcmp(top[0], top[1], sizeof top[0]) &&
          !memcmp(top[0], top[2], sizeof top[0]));
    CHECK(!memcmp(sc[0], sc[1], sizeof sc[0]) && !memcmp(sc[0], sc[2], sizeof sc[0]) && z[0] == z[1] && z[0] == z[2]);
    { /* ncf_predict by integer ids finds text ids by their decimal form: "7", not "007"; 1004 */
        float a = 0, b = 0;
        int32_t pu = ncf_find(m, NCF_USER, "7"), pi = ncf_find(m, NCF_ITEM, "1004");
        CHECK(ncf_predict(m, 7, 1004, &a) == NCF_OK && ncf_predict_index(m, &pu, &pi, 1, &b) == NCF_OK && a == b);
        CHECK_ERR(ncf_predict(m, 7, 4, &a), NCF_ERR_ARG, "unknown item 4");
    }
    ro.k = 3, ro.probabilities = 1; /* probabilities are the logits' sigmoid */
    CHECK(ncf_recommend_index(m, u, &ro, top[0], sc[1]) == 3 && top[0][0] == top[2][0] &&
          fabsf(sc[1][0] - 1.0f / (1.0f + expf(-sc[2][0]))) < 1e-6f);
    CHECK_ERR(ncf_recommend_index(m, d.num_users, &ro, top[0], NULL), NCF_ERR_ARG, "an index, not an id");
done:
    ncf_model_free(m), ncf_model_free(loaded), ncf_model_free(in_place);
    free(aligned), ncf_free(buf);
    ncf_dataset_free(&d);
}

/* A column of plain integers keeps numbers (and today's speed); one id written otherwise turns
   the whole column to text, so "01" and "1" are two ids and nothing loses a zero. */
static void test_plain_integer_ids_stay_numbers(void)
{
    ncf_dataset d;
    ncf_dataset_opts o = ncf_dataset_opts_default();
    const char *a = "1,10\n1,20\n2,10\n2,30\n";
    const char *b = "1,10\n1,20\n2,10\n2,30\n01,30\n01,20\n";
    char id[16];
    o.eval_negatives = 1;
    CHECKF(ncf_load_dataset_mem(&d, "a", a, strlen(a), &o) == NCF_OK, "%s", ncf_error_text());
    CHECK(d.raw_user && d.raw_item && !d.user_text && !d.item_text && d.raw_item[2] == 30);
    CHECK(ncf_dataset_id(&d, NCF_USER, 1, id, sizeof id) == 1 && !strcmp(id, "2") &&
          ncf_dataset_find(&d, NCF_ITEM, "30") == 2);
    CHECK_ERR(ncf_dataset_find(&d, NCF_ITEM, "030"), NCF_ERR_ARG, "unknown item '030'");
    ncf_dataset_free(&d);
    CHECKF(ncf_load_dataset_mem(&d, "b", b, strlen(b), &o) == NCF_OK, "%s", ncf_error_text());
    CHECK(d.user_text && !d.raw_user && d.raw_item && d.num_users == 3);
    CHECK(ncf_dataset_find(&d, NCF_USER, "01") == 0 &&
          ncf_dataset_find(&d, NCF_USER, "1") == 1); /* "01" < "1" by bytes */
    ncf_dataset_free(&d);
}

static void test_long_and_nul_ids_refused_with_file_line(void)
{
    ncf_dataset d;
    char text[1024];
    const char *head = "user,item\nu1,i1\nu1,";
    size_t n = strlen(head);
    memset(text, 'x', sizeof text);
    memcpy(text, head, n);
    text[n + NCF_MAX_ID_BYTES + 1] = '\n';
    CHECK_ERR(ncf_load_dataset_mem(&d, "long.csv", text, n + NCF_MAX_ID_BYTES + 2, NULL), NCF_ERR_PARSE,
              "long.csv:3: item id 'xxxx");
    memcpy(text + n, "ok\nu2,a", 7), text[n + 7] = 0, memcpy(text + n + 8, "b\n", 2);
    n += 10;
    CHECK_ERR(ncf_load_dataset_mem(&d, "nul.csv", text, n, NULL), NCF_ERR_PARSE,
              "nul.csv:4: item id 'a\\x00b' holds a NUL byte");
    CHECK(d.user_ptr == NULL);
}

/* min_item_ratings drops items with fewer positives from the users kept, and kcore repeats both
   filters until every user and item meets its minimum; the report says what each dropped.
   A: a b c d, B: a b f, C: a c f, D: e, E: a e (min_ratings 2, min_item_ratings 2). */
/* The weight the log gives (user, item): 1 + alpha f(s), s the sum of the pair's strengths,
   read here with sscanf (not the library's reader). */
static float log_weight(const char *text, const char *user, const char *item, int weighting, double alpha)
{
    const char *p = strchr(text, '\n') + 1; /* (past the header) */
    char u[16], i[16];
    double v, sum = 0;
    int n;
    for (; *p && sscanf(p, "%15[^,],%15[^,],%lf%n", u, i, &v, &n) == 3; p += n + 1)
        if (!strcmp(u, user) && !strcmp(i, item)) sum += v;
    return (float)(1 + alpha * (weighting == NCF_WEIGHT_LOG ? log1p(sum) : sum));
}

/* Every training positive of d weighs what the log says; items ascending per user. */
static int weights_match_log(const ncf_dataset *d, const char *text, int weighting, double alpha)
{
    char u[16], i[16];
    int user, ok = d->weight != NULL;
    int64_t k;
    for (user = 0; ok && user < d->num_users; user++)
        for (k = d->user_ptr[user]; ok && k < d->user_ptr[user + 1]; k++) {
            ok &= ncf_dataset_id(d, NCF_USER, user, u, sizeof u) > 0 &&
                ncf_dataset_id(d, NCF_ITEM, d->items[k], i, sizeof i) > 0;
            ok &= d->weight[k] == log_weight(text, u, i, weighting, alpha);
            ok &= k == d->user_ptr[user] || d->items[k - 1] < d->items[k];
        }
    for (user = 0; ok && d->val_item && user < d->num_users; user++) /* the validation items keep theirs */
        if (d->val_item[user] >= 0) {
            ok &= d->val_weight && ncf_dataset_id(d, NCF_USER, user, u, sizeof u) > 0 &&
                ncf_dataset_id(d, NCF_ITEM, d->val_item[user], i, sizeof i) > 0;
            ok &= ok && d->val_weight[user] == log_weight(text, u, i, weighting, alpha);
        }
    return ok;
}

static int load_text(ncf_dataset *d, const char *name, const char *text, const ncf_dataset_opts *o)
{
    return ncf_load_dataset_mem(d, name, text, strlen(text), o);
}

/* A strength column weighs each positive 1 + alpha f(s), s summed over a pair's lines; the
   weights stay beside their positives through the hold-outs, ncf_dataset_add_ids (whose ids
   here reorder the items) and the sampler; bad strengths and settings name what is wrong. */
static void test_weights_follow_their_positives(void)
{
    const char *log = "user,item,plays\nu1,9,2\nu1,10,5\nu1,9,3\nu1,11,0\nu1,9,1\nu1,12,4\nu2,9,7\nu2,10,1\n"
                      "u2,11,2.5\nu2,12,6\nu2,13,1\nu3,10,8\nu3,13,2\nu3,12,1\nu3,9,1\nu3,14,3\nu3,15,0.5\nu3,14,1\n";
    const char *other = "user,item\nu1,9\nu4,x\nu2,10\nu4,9\n";
    ncf_dataset_opts o = ncf_dataset_opts_default();
    ncf_dataset d, e;
    ncf_model *m = NULL;
    ncf_config c = ncf_config_default();
    ncf_sampler s;
    int w, bad_label = 0, positives = 0;
    o.eval_negatives = 1, o.seed = 4, o.holdout = NCF_HOLDOUT_RANDOM;
    CHECK(ncf_load_dataset_mem(&d, "plays.csv", log, strlen(log), &o) == NCF_OK && d.weight == NULL);
    ncf_dataset_free(&d);
    for (w = NCF_WEIGHT_LINEAR; w <= NCF_WEIGHT_LOG; w++) {
        o.weighting = w, o.alpha = w == NCF_WEIGHT_LOG ? 2.5f : 0.5f, o.validation = 0;
        CHECKF(ncf_load_dataset_mem(&d, "plays.csv", log, strlen(log), &o) == NCF_OK, "%s", ncf_error_text());
        CHECK(weights_match_log(&d, log, w, o.alpha) && d.report.duplicates == 3 &&
              !strcmp(d.report.columns[4], "plays"));
        CHECK(d.report.weight_min == 1 && d.report.weight_max > 4);
        ncf_dataset_free(&d);
        o.validation = 1;
        CHECKF(ncf_load_dataset_mem(&d, "plays.csv", log, strlen(log), &o) == NCF_OK, "%s", ncf_error_text());
        CHECK(d.val_item && weights_match_log(&d, log, w, o.alpha));
        /* a model whose text ids put "10" before "9": the data's items change order */
        {
            ncf_dataset_opts q = ncf_dataset_opts_default();
            q.holdout = NCF_HOLDOUT_NONE;
            CHECKF(ncf_load_dataset_mem(&e, "other.csv", other, strlen(other), &q) == NCF_OK, "%s", ncf_error_text());
        }
        c.num_users = e.num_users, c.num_items = e.num_items;
        CHECK(ncf_model_create(&m, &c) == NCF_OK && ncf_model_set_ids(m, &e) == NCF_OK);
        CHECK(ncf_dataset_add_ids(&d, m) == NCF_OK && d.item_text && d.num_users == 4);
        CHECK(weights_match_log(&d, log, w, o.alpha));
        CHECK(ncf_sampler_init(&s, &d, 3, 9) == NCF_OK);
        { /* an epoch's positives carry their weights */
            int32_t us[512], is[512];
            float ys[512];
            int64_t j, k;
            CHECK(s.num_examples <= 512);
            ncf_sampler_fill(&s, 1, 0, (int)s.num_examples, us, is, ys);
            for (j = 0; j < s.num_examples; j++) {
                if (ys[j] == 0) continue;
                positives++;
                for (k = d.user_ptr[us[j]]; k < d.user_ptr[us[j] + 1] && d.items[k] != is[j]; k++) {}
                bad_label += k == d.user_ptr[us[j] + 1] || ys[j] != d.weight[k];
            }
        }
        ncf_model_free(m), m = NULL;
        ncf_dataset_free(&d), ncf_dataset_free(&e);
    }
    CHECKF(bad_label == 0 && positives >= 18, "%d of %d positives with the wrong weight", bad_label, positives);
    /* bad strengths name file:line; bad settings say what is wrong */
    o = ncf_dataset_opts_default(), o.eval_negatives = 1, o.weighting = NCF_WEIGHT_LINEAR;
    CHECK_ERR(load_text(&d, "neg.csv", "user,item,plays\n1,2,3\n1,3,-1\n", &o), NCF_ERR_PARSE,
              "neg.csv:3: strength '-1'");
    CHECK_ERR(load_text(&d, "inf.csv", "user,item,plays\n1,2,1e999\n", &o), NCF_ERR_PARSE,
              "inf.csv:2: strength '1e999'");
    o.columns[NCF_COL_RATING] = "", o.columns[NCF_COL_STRENGTH] = "plays";
    CHECK_ERR(load_text(&d, "nan.csv", "user,item,plays\n1,2,nan\n", &o), NCF_ERR_PARSE, "nan.csv:2: strength 'nan'");
    CHECK_ERR(load_text(&d, "txt.csv", "user,item,plays\n1,2,many\n", &o), NCF_ERR_PARSE, "txt.csv:2: strength 'many'");
    o.columns[NCF_COL_STRENGTH] = NULL;
    CHECK_ERR(load_text(&d, "none.csv", "user,item\n1,2\n", &o), NCF_ERR_ARG, "needs a strength column");
    o = ncf_dataset_opts_default(), o.eval_negatives = 1, o.weighting = NCF_WEIGHT_LOG, o.alpha = 0;
    CHECK_ERR(ncf_load_dataset_mem(&d, "a0.csv", log, strlen(log), &o), NCF_ERR_ARG, "alpha 0");
    o.alpha = NAN;
    CHECK_ERR(ncf_load_dataset_mem(&d, "anan.csv", log, strlen(log), &o), NCF_ERR_ARG, "0 < alpha");
    o.alpha = 1e6f, o.weighting = NCF_WEIGHT_LINEAR, o.holdout = NCF_HOLDOUT_NONE;
    CHECK_ERR(load_text(&d, "big.csv", "user,item,plays\n1,2,1e4\n1,3,1\n2,4,1\n2,2,1\n", &o), NCF_ERR_DATA,
              "past 1e+09");
    o.weighting = 7;
    CHECK_ERR(ncf_load_dataset_mem(&d, "w7.csv", log, strlen(log), &o), NCF_ERR_ARG, "weighting 7");
}

/* The weight of user u's positive of item i (ids as written), or -1 when it is none. */
static double weight_of(const ncf_dataset *d, const char *u, const char *i)
{
    int a = ncf_dataset_find(d, NCF_USER, u), b = ncf_dataset_find(d, NCF_ITEM, i);
    int64_t k;
    if (a < 0 || b < 0) return -1;
    for (k = d->user_ptr[a]; k < d->user_ptr[a + 1]; k++)
        if (d->items[k] == b) return d->weight ? d->weight[k] : 1;
    return -1;
}

/* A rating of -1 ("on my list, not rated") that min_rating drops is never read as a strength;
   kept, it is counted for the caller to say. An event log's kinds map to strengths, the kinds
   not listed are no positives, and the report names each kind with its lines. */
static void test_events_and_low_ratings_filter_before_strengths(void)
{
    const char *ratings = "user,item,rating\n1,10,-1\n1,11,8\n2,10,9\n2,12,-1\n3,11,7\n3,12,0\n";
    const char *events = "visitorid,itemid,event,timestamp\n"
                         "v1,p1,view,1\nv1,p1,view,2\nv1,p1,transaction,3\nv1,p2,view,4\nv1,p3,remove,5\n"
                         "v2,p2,addtocart,6\nv2,p3,view,7\nv2,p4,remove,8\n";
    char many[400];
    ncf_dataset d;
    ncf_dataset_opts o = ncf_dataset_opts_default();
    const ncf_load_report *r = &d.report;
    int k;
    o.holdout = NCF_HOLDOUT_NONE, o.min_rating = 1, o.weighting = NCF_WEIGHT_LOG, o.alpha = 1;
    CHECKF(load_text(&d, "r.csv", ratings, &o) == NCF_OK, "%s", ncf_error_text());
    CHECK(r->below_min_rating == 3 && r->nonpositive_ratings == 0 && d.num_train == 3);
    CHECK(fabs(weight_of(&d, "1", "11") - (1 + log(9.0))) < 1e-5 && weight_of(&d, "1", "10") < 0);
    ncf_dataset_free(&d);
    o.min_rating = -HUGE_VALF; /* kept, the -1 lines cannot be strengths: said, with the way out */
    CHECK_ERR(load_text(&d, "r.csv", ratings, &o), NCF_ERR_PARSE,
              "r.csv:2: strength '-1' is not a number in [0, 1e15] "
              "(a rating below 0 often means 'not rated'");
    o.weighting = NCF_WEIGHT_NONE;
    CHECKF(load_text(&d, "r.csv", ratings, &o) == NCF_OK, "%s", ncf_error_text());
    CHECK(r->nonpositive_ratings == 3 && r->below_min_rating == 0 && d.num_train == 6);
    ncf_dataset_free(&d);

    /* events: no list counts the kinds, every line a positive */
    o = ncf_dataset_opts_default(), o.holdout = NCF_HOLDOUT_NONE;
    CHECKF(load_text(&d, "ev.csv", events, &o) == NCF_OK, "%s", ncf_error_text());
    CHECK(!strcmp(r->columns[NCF_COL_EVENT], "event") && r->event_kinds == 4 && r->events_dropped == 0);
    CHECK(!strcmp(r->events[0].name, "view") && r->events[0].lines == 4 && r->events[0].kept);
    CHECK(!strcmp(r->events[1].name, "transaction") && !strcmp(r->events[2].name, "remove") &&
          r->events[2].lines == 2 && !strcmp(r->events[3].name, "addtocart"));
    CHECK(d.num_train == 6 && d.weight == NULL);
    ncf_dataset_free(&d);
    /* a list: its kinds first, in its order; remove is no positive; a pair's lines sum */
    o.events = "view=1,addtocart=3,transaction=5,click", o.weighting = NCF_WEIGHT_LINEAR, o.alpha = 0.5f;
    CHECKF(load_text(&d, "ev.csv", events, &o) == NCF_OK, "%s", ncf_error_text());
    CHECK(r->event_kinds == 5 && r->events_dropped == 2 && r->below_min_rating == 0 && d.num_train == 4);
    CHECK(!strcmp(r->events[3].name, "click") && r->events[3].lines == 0 && r->events[3].kept &&
          r->events[3].strength == 1);
    CHECK(!strcmp(r->events[4].name, "remove") && !r->events[4].kept && r->events[1].strength == 3);
    CHECK(fabs(weight_of(&d, "v1", "p1") - (1 + 0.5 * 7)) < 1e-6 && fabs(weight_of(&d, "v2", "p2") - 2.5) < 1e-6);
    CHECK(weight_of(&d, "v1", "p3") < 0 && ncf_dataset_find(&d, NCF_ITEM, "p4") < 0);
    ncf_dataset_free(&d);
    /* a filter by kind alone, without weights */
    o.events = "transaction", o.weighting = NCF_WEIGHT_NONE;
    CHECK_ERR(load_text(&d, "ev.csv", events, &o), NCF_ERR_DATA, "no user is left"); /* (one positive: v1 p1) */
    o.events = "transaction,addtocart";
    CHECKF(load_text(&d, "ev.csv", events, &o) == NCF_OK && d.num_train == 2 && r->events_dropped == 6, "%s",
           ncf_error_text());
    ncf_dataset_free(&d);
    /* bad lists, and a list without an event column, name what is wrong */
    o.events = "view=x";
    CHECK_ERR(load_text(&d, "ev.csv", events, &o), NCF_ERR_ARG, "'x' is not a strength");
    o.events = "view,view=2";
    CHECK_ERR(load_text(&d, "ev.csv", events, &o), NCF_ERR_ARG, "'view' is listed twice");
    o.events = "view=-1";
    CHECK_ERR(load_text(&d, "ev.csv", events, &o), NCF_ERR_ARG, "'-1' is not a strength");
    o.events = "view,";
    CHECK_ERR(load_text(&d, "ev.csv", events, &o), NCF_ERR_ARG, "each kind is a name of 1 to 31 bytes");
    for (k = 0, many[0] = 0; k < 17; k++)
        snprintf(many + strlen(many), sizeof many - strlen(many), "%se%d", k ? "," : "", k);
    o.events = many;
    CHECK_ERR(load_text(&d, "ev.csv", events, &o), NCF_ERR_ARG, "at most 16 kinds");
    o.events = "view";
    CHECK_ERR(load_text(&d, "r.csv", ratings, &o), NCF_ERR_ARG, "r.csv:1: an events list needs an event column");
    CHECK_ERR(load_text(&d, "n.csv", "1,2,view\n1,3,view\n", &o), NCF_ERR_ARG, "the event column's number");
    o.columns[NCF_COL_EVENT] = "3";
    CHECKF(load_text(&d, "n.csv", "1,2,view\n1,3,view\n2,2,view\n2,4,click\n3,3,view\n3,5,view\n", &o) == NCF_OK &&
               d.num_train == 5,
           "%s", ncf_error_text());
    ncf_dataset_free(&d);
    /* an event name longer than any a list can hold: counted with the others, never a positive */
    o.columns[NCF_COL_EVENT] = NULL, o.events = "view";
    CHECKF(load_text(&d, "long.csv",
                     "user,item,event\nA,a,view\nA,b,view\nB,a,view\nB,c,"
                     "viewviewviewviewviewviewviewviewviewview\nC,c,view\nC,b,\"view\"\"s\"\n",
                     &o) == NCF_OK,
           "%s", ncf_error_text());
    CHECKF(r->event_kinds == 2 && r->other_event_lines == 1 && r->events_dropped == 2 && d.num_train == 4,
           "%d kinds, %lld others, %lld dropped, %lld positives", r->event_kinds, (long long)r->other_event_lines,
           (long long)r->events_dropped, (long long)d.num_train);
    ncf_dataset_free(&d);
    o.weighting = NCF_WEIGHT_LOG, o.columns[NCF_COL_STRENGTH] = "timestamp";
    CHECK_ERR(load_text(&d, "ev.csv", events, &o), NCF_ERR_ARG, "the events' values are the strengths; give one");
}

static void test_item_filter_and_kcore_report_what_they_drop(void)
{
    const char *text = "user,item\nA,a\nA,b\nA,c\nA,d\nB,a\nB,b\nB,f\nC,a\nC,c\nC,f\nD,e\nE,a\nE,e\n";
    ncf_dataset_opts o = ncf_dataset_opts_default();
    ncf_dataset d;
    const ncf_load_report *r = &d.report;
    char id[8];
    o.holdout = NCF_HOLDOUT_NONE, o.min_ratings = 2, o.min_item_ratings = 2;
    /* D (1 positive) goes first; then of A B C E's positives d and e have 1 each and go; E keeps a */
    CHECKF(ncf_load_dataset_mem(&d, "log", text, strlen(text), &o) == NCF_OK, "%s", ncf_error_text());
    CHECK(d.num_users == 4 && d.num_items == 4 && d.num_train == 10);
    CHECK(r->users_few_ratings == 1 && r->few_ratings == 1 && r->items_few_item_ratings == 2 &&
          r->few_item_ratings == 2);
    CHECK(r->users_filtered_out == 0 && r->users_every_item == 0 && r->filter_rounds == 2);
    ncf_dataset_free(&d);
    /* kcore: E, left with one positive, goes too, and nothing more */
    o.kcore = 1;
    CHECKF(ncf_load_dataset_mem(&d, "log", text, strlen(text), &o) == NCF_OK, "%s", ncf_error_text());
    CHECK(d.num_users == 3 && d.num_items == 4 && d.num_train == 9 && r->users_filtered_out == 1 &&
          r->filter_rounds == 2);
    CHECK(ncf_dataset_id(&d, NCF_USER, 2, id, sizeof id) > 0 && !strcmp(id, "C"));
    CHECK(ncf_dataset_id(&d, NCF_ITEM, 3, id, sizeof id) > 0 && !strcmp(id, "f"));
    ncf_dataset_free(&d);
    o.kcore = 2;
    CHECK_ERR(ncf_load_dataset_mem(&d, "log", text, strlen(text), &o), NCF_ERR_ARG, "kcore 2");
    o.kcore = 1, o.min_item_ratings = 5;
    CHECK_ERR(ncf_load_dataset_mem(&d, "log", text, strlen(text), &o), NCF_ERR_DATA, "no user is left by the filters");
}

static void test_min_rating_keeps_positives_and_reports_drops(void)
{
    /* a book export: 0 means seen, 1-10 a rating */
    const char *text = "user;item;rating\nA;b1;0\nA;b2;8\nA;b3;9\nB;b1;0\nB;b4;0.9\nC;b2;5\nC;b5;6\nC;b5;7\nD;b2;1.1\n";
    ncf_dataset d;
    ncf_dataset_opts o = ncf_dataset_opts_default();
    const ncf_load_report *r = &d.report;
    o.eval_negatives = 1, o.min_rating = 1.1f, o.min_ratings = 2; /* (1.1 rated is at least 1.1f) */
    CHECKF(ncf_load_dataset_mem(&d, "books.csv", text, strlen(text), &o) == NCF_OK, "%s", ncf_error_text());
    /* read: 9 lines, users A B C D, items b1..b5. Below 1: 3 lines; B and b1, b4 left with none.
       min_ratings 2: D (one positive) dropped; no item only D rated. (C, b5) twice: one merged. */
    CHECK(r->interactions == 9 && r->users_read == 4 && r->items_read == 5);
    CHECK(r->below_min_rating == 3 && r->users_below_min_rating == 1 && r->items_below_min_rating == 2);
    CHECK(r->few_ratings == 1 && r->users_few_ratings == 1 && r->items_few_ratings == 0 && r->duplicates == 1);
    CHECK(d.num_users == 2 && d.num_items == 3 && d.num_train == 2); /* A {b2,b3}, C {b2,b5}: one each held out */
    ncf_dataset_free(&d);
    o.min_ratings = 3; /* D, and then b2 only... no: A and C keep b2; D's drop costs no item */
    CHECKF(ncf_load_dataset_mem(&d, "books.csv", text, strlen(text), &o) == NCF_ERR_DATA, "%s", "loaded");
    o.min_ratings = 0, o.min_rating = 20.0f;
    CHECK_ERR(ncf_load_dataset_mem(&d, "books.csv", text, strlen(text), &o), NCF_ERR_DATA,
              "no interaction is a positive (rated at least min_rating");
    o.min_rating = 1.0f, o.columns[NCF_COL_RATING] = "";
    CHECK_ERR(ncf_load_dataset_mem(&d, "books.csv", text, strlen(text), &o), NCF_ERR_ARG,
              "min_rating needs a rating column");
}

/* Whether the test items of a and b are the same, user for user. */
static int same_tests(const ncf_dataset *a, const ncf_dataset *b)
{
    return a->num_users == b->num_users && !memcmp(a->test_item, b->test_item, sizeof(int32_t) * (size_t)a->num_users);
}

static void test_holdout_latest_random_or_none_as_asked(void)
{
    char text[8192];
    size_t n = 0;
    ncf_dataset lat, r1, r1b, r2, none;
    ncf_dataset_opts o = ncf_dataset_opts_default();
    ncf_metrics m;
    ncf_eval_opts eo = ncf_eval_opts_default();
    int u, i, differ = 0, ok;
    for (u = 0; u < 50; u++) /* user u rated items u..u+5, the latest by time the first */
        for (i = 0; i < 6; i++) n += (size_t)sprintf(text + n, "%d,%d,%d\n", u, u + i, 1000 - i);
    n += (size_t)sprintf(text + n, "99,7,5\n"); /* one interaction: it stays in training */
    o.eval_negatives = 3, o.columns[NCF_COL_RATING] = "", o.columns[NCF_COL_TIME] = "3";
    CHECK(ncf_load_dataset_mem(&lat, "t.csv", text, n, &o) == NCF_OK && lat.report.holdout == NCF_HOLDOUT_LATEST);
    for (u = 0, ok = 1; u < 50; u++) ok &= lat.test_item[u] >= 0 && lat.raw_item[lat.test_item[u]] == u;
    CHECK(ok && lat.test_item[50] == -1 && lat.user_ptr[51] - lat.user_ptr[50] == 1);
    o.holdout = NCF_HOLDOUT_RANDOM, o.seed = 1;
    CHECK(ncf_load_dataset_mem(&r1, "t.csv", text, n, &o) == NCF_OK &&
          ncf_load_dataset_mem(&r1b, "t.csv", text, n, &o) == NCF_OK);
    o.seed = 2;
    CHECK(ncf_load_dataset_mem(&r2, "t.csv", text, n, &o) == NCF_OK);
    CHECK(same_tests(&r1, &r1b) && !same_tests(&r1, &r2) && r1.report.holdout == NCF_HOLDOUT_RANDOM);
    for (u = 0, ok = 1; u < 50; u++) { /* one of the user's own, held out of training */
        int64_t t = r1.raw_item[r1.test_item[u]], k;
        ok &= t >= u && t < u + 6 && r1.user_ptr[u + 1] - r1.user_ptr[u] == 5;
        for (k = r1.user_ptr[u]; k < r1.user_ptr[u + 1]; k++) ok &= r1.items[k] != r1.test_item[u];
        differ += r1.test_item[u] != lat.test_item[u];
    }
    CHECK(ok && differ > 25 && r1.test_item[50] == -1);
    o.columns[NCF_COL_TIME] = NULL, o.holdout = NCF_HOLDOUT_AUTO, o.seed = 1; /* no time column: random */
    {
        ncf_dataset auto_;
        o.columns[NCF_COL_TIME] = "";
        CHECK(ncf_load_dataset_mem(&auto_, "t.csv", text, n, &o) == NCF_OK &&
              auto_.report.holdout == NCF_HOLDOUT_RANDOM);
        ncf_dataset_free(&auto_);
    }
    o.holdout = NCF_HOLDOUT_NONE, o.columns[NCF_COL_TIME] = "3";
    CHECK(ncf_load_dataset_mem(&none, "t.csv", text, n, &o) == NCF_OK);
    for (u = 0, ok = 1; u < none.num_users; u++) ok &= none.test_item[u] == -1;
    CHECK(ok && none.num_train == 301 && none.num_eval_neg == 0 && none.report.holdout == NCF_HOLDOUT_NONE);
    {
        ncf_model *md = NULL;
        ncf_sampler s;
        ncf_config c = ncf_config_default();
        int64_t top[3];
        c.num_users = none.num_users, c.num_items = none.num_items;
        CHECK(ncf_model_create(&md, &c) == NCF_OK && ncf_model_set_ids(md, &none) == NCF_OK &&
              ncf_sampler_init(&s, &none, 2, 1) == NCF_OK && ncf_train_epoch(md, &s, 1, NULL, NULL, NULL) == NCF_OK);
        CHECK_ERR(ncf_evaluate(md, &none, &eo, &m), NCF_ERR_DATA, "nothing to evaluate");
        CHECK_ERR(ncf_evaluate(NULL, &none, &eo, &m), NCF_ERR_DATA, "nothing to evaluate");
        CHECK(ncf_save(md, path_in_dir("none.ncf"), NCF_SAVE_MODEL) == NCF_OK);
        CHECK(recommend_k(md, 3, 3, 1, top, NULL) == 3 && top[0] != 3 && top[1] != 4);
        ncf_model_free(md);
        remove(path_in_dir("none.ncf"));
    }
    o.validation = 1;
    ncf_dataset_free(&r2);
    CHECK_ERR(ncf_load_dataset_mem(&r2, "t.csv", text, n, &o), NCF_ERR_ARG, "validation needs a hold-out");
    ncf_dataset_free(&lat), ncf_dataset_free(&r1), ncf_dataset_free(&r1b), ncf_dataset_free(&r2),
        ncf_dataset_free(&none);
}

/* HR@1 and the ranks of the popularity baseline, worked by hand on the metrics test's data. */
static void test_popularity_figures_match_hand_computation(void)
{
    /* users 0-3; training positives: item 0 by 3 users, item 1 by 2, item 2 by 1 */
    int64_t tu[10] = {0, 0, 1, 1, 2, 3, 0, 1, 2, 3}, ti[10] = {0, 1, 0, 1, 0, 2, 3, 2, 5, 4};
    int64_t tt[10] = {1, 1, 1, 1, 1, 1, 2, 2, 2, 2};
    int32_t negs[8] = {0, 4, /* user 0, test 3 (pop 0): 0 outranks it, 4 (pop 0) ties: rank 2 */
                       5, 3, /* user 1, test 2 (pop 1): rank 0 */
                       1, 2, /* user 2, test 5 (pop 0): rank 2 */
                       0, 5 /* user 3, test 4 (pop 0): 0 outranks, 5 ties: rank 2 */};
    ncf_dataset d;
    ncf_metrics m;
    ncf_eval_opts o = ncf_eval_opts_default();
    CHECK(build_fixed(&d, tu, ti, tt, 10, 4, 6) == NCF_OK);
    CHECK(d.test_item[0] == 3 && d.test_item[1] == 2 && d.test_item[2] == 5 && d.test_item[3] == 4);
    d.eval_neg = (int32_t *)NCF_MALLOC(sizeof negs);
    memcpy(d.eval_neg, negs, sizeof negs), d.num_eval_neg = 2;
    o.k = 1;
    CHECK(ncf_evaluate(NULL, &d, &o, &m) == NCF_OK && m.users == 4 && m.hr == 0.25 &&
          fabs(m.mrr - (1 + 3 / 3.0) / 4) < 1e-12);
    o.k = 3;
    CHECK(ncf_evaluate(NULL, &d, &o, &m) == NCF_OK && m.hr == 1.0);
    /* full ranking: user 1 (rated 0, 1; test 2): items 3, 4, 5 all score 0 < 1: rank 0. User 0
       (rated 0, 1, test 3): 2 outranks (1 > 0), 4 and 5 tie: rank 3. */
    o.full_ranking = 1, o.k = 1;
    CHECK(ncf_evaluate(NULL, &d, &o, &m) == NCF_OK && m.users == 4 && m.hr == 0.25);
    ncf_dataset_free(&d);
}
