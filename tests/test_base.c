/* tests/test_base.c - errors, the environment: threads that cannot start, files a killed save left. Included by tests.c (one program). */
/* ---- >>errors: bad arguments refused, nothing applied ---------------------------------------- */

static void test_bad_arguments_refused_and_nothing_applied(void)
{
    ncf_config c = small_config(NCF_NEUMF, 0);
    ncf_model *m = NULL;
    ncf_dataset d;
    ncf_sampler s;
    ncf_metrics met;
    int32_t u[2] = {0, 5}, it[2] = {0, 1};
    float y[2] = {1, 0};
    double loss;
    CHECK_ERR(ncf_model_create(NULL, &c), NCF_ERR_ARG, "NULL");
    CHECK_ERR(ncf_model_create(&m, NULL), NCF_ERR_ARG, "NULL");
    c.num_users = 0;
    CHECK_ERR(ncf_model_create(&m, &c), NCF_ERR_ARG, "num_users");
    CHECK(m == NULL);
    c = small_config(NCF_NEUMF, 0), c.mf_dim = 0;
    CHECK_ERR(ncf_model_create(&m, &c), NCF_ERR_ARG, "mf_dim");
    c = small_config(NCF_NEUMF, 0), c.layers[0] = 7;
    CHECK_ERR(ncf_model_create(&m, &c), NCF_ERR_ARG, "even");
    c = small_config(NCF_NEUMF, 0), c.layers[2] = 0;
    CHECK_ERR(ncf_model_create(&m, &c), NCF_ERR_ARG, "layer 2");
    c = small_config(NCF_MLP, 0), c.num_layers = 1;
    CHECK_ERR(ncf_model_create(&m, &c), NCF_ERR_ARG, "layer sizes");
    c = small_config(NCF_NEUMF, 0), c.lr = 0;
    CHECK_ERR(ncf_model_create(&m, &c), NCF_ERR_ARG, "lr");
    c = small_config(NCF_NEUMF, 0), c.model = (ncf_model_type)9;
    CHECK_ERR(ncf_model_create(&m, &c), NCF_ERR_ARG, "model type");
    c = small_config(NCF_NEUMF, 0);
    CHECK(ncf_model_create(&m, &c) == NCF_OK);
    if (!m) return;
    CHECK_ERR(ncf_train_step(m, u, it, y, 2, &loss), NCF_ERR_ARG, "outside"); /* user 5 of 5 */
    u[1] = -1;
    CHECK_ERR(ncf_forward_backward(m, u, it, y, 2, &loss), NCF_ERR_ARG, "batch position 1");
    u[1] = 1;
    CHECK_ERR(ncf_train_step(m, NULL, it, y, 2, &loss), NCF_ERR_ARG, "NULL");
    CHECK_ERR(ncf_train_step(m, u, it, NULL, 2, &loss), NCF_ERR_ARG, "NULL");
    CHECK_ERR(ncf_train_step(m, u, it, y, 0, &loss), NCF_ERR_ARG, "size 0");
    CHECK_ERR(ncf_loss(NULL, u, it, y, 2, &loss), NCF_ERR_ARG, "NULL");
    CHECK_ERR(ncf_predict_index(m, u, it, 2, NULL), NCF_ERR_ARG, "NULL");
    CHECK(m->step == 0); /* nothing applied */
    CHECK_ERR(ncf_sampler_init(&s, NULL, 4, 1), NCF_ERR_ARG, "dataset");
    CHECK_ERR(evaluate_k(m, NULL, 10, NCF_SAMPLED, &met), NCF_ERR_ARG, "dataset");
    CHECK(ncf_synthetic(&d, 50, 40, 500, 4, 1) == NCF_OK);
    CHECK_ERR(evaluate_k(m, &d, 10, NCF_SAMPLED, &met), NCF_ERR_ARG, "the data has 50 users");
    CHECK_ERR(ncf_sample_eval_negatives(&d, 0, 1), NCF_ERR_ARG, "n > 0");
    ncf_dataset_free(&d);
    CHECK_ERR(ncf_synthetic(&d, 0, 40, 500, 4, 1), NCF_ERR_ARG, "ncf_synthetic");
    ncf_dataset_free(NULL);
    ncf_model_free(NULL);
    ncf_model_free(m);
}

/* ---- >>environment: a hostile system: threads that cannot start, stale temporary files ------- */

/* Under an address space too small for the threads' stacks, or a limit on a user's threads,
   OpenMP's runtime exits the process as it starts a team; the library starts the threads
   first and runs each region with as many as could start. (--thread-limit-child runs the work
   in a fresh process so limited.) */
#if defined(_OPENMP) && !defined(_WIN32) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define THREAD_LIMIT_TEST 1
/* Trains an epoch, evaluates and serves every user under the limits given (address space MB
   past what the process has, or -1; threads the user may run, or 0), with `threads` asked
   for; prints a hash of every answer. */
static int thread_limit_child(long extra_mb, long nproc, int threads)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = 0;
    struct rlimit r;
    ncf_dataset d;
    ncf_model *m = NULL;
    ncf_sampler smp;
    ncf_config c = ncf_config_default();
    ncf_rec_opts ro = ncf_rec_opts_default();
    ncf_metrics a, b;
    int32_t items[60 * 5];
    float scores[60 * 5];
    int counts[60], rc;
    uint64_t h = 0;
    double loss = 0;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmSize:", 7)) kb = atol(line + 7);
    if (f) fclose(f);
    if (nproc > 0 && getuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) return 3; /* (root has no limit) */
    r.rlim_cur = r.rlim_max = (rlim_t)nproc;
    if (nproc > 0 && setrlimit(RLIMIT_NPROC, &r) != 0) return 3;
    r.rlim_cur = r.rlim_max = (rlim_t)(kb + extra_mb * 1024) * 1024;
    if (extra_mb >= 0 && (!kb || setrlimit(RLIMIT_AS, &r) != 0)) return 3;
    ncf_set_threads(threads);
    rc = ncf_synthetic(&d, 60, 40, 900, 4, 1);
    c.num_users = d.num_users, c.num_items = d.num_items, c.batch_size = 64;
    if (rc == NCF_OK) rc = ncf_sample_eval_negatives(&d, 10, 2);
    if (rc == NCF_OK) rc = ncf_model_create(&m, &c);
    if (rc == NCF_OK) rc = ncf_model_set_ids(m, &d);
    if (rc == NCF_OK) rc = ncf_sampler_init(&smp, &d, 4, 1);
    if (rc == NCF_OK) rc = ncf_train_epoch(m, &smp, 1, NULL, NULL, &loss);
    if (rc == NCF_OK) rc = evaluate_k(m, &d, 10, NCF_SAMPLED, &a);
    if (rc == NCF_OK) rc = evaluate_k(m, &d, 10, NCF_FULL_RANKING, &b);
    ro.k = 5;
    if (rc == NCF_OK) rc = ncf_recommend_users(m, NULL, d.num_users, &ro, items, scores, counts);
    if (rc == NCF_OK) {
        h = ncf__mix64(h ^ (uint64_t)(loss * 1e15)) ^ (uint64_t)(a.hr * 1e9) ^ ((uint64_t)(b.ndcg * 1e12) << 20);
        h = ncf__mix64(h ^ (uint64_t)ncf__crc32((const uint8_t *)items, sizeof items) ^
                       ((uint64_t)ncf__crc32((const uint8_t *)scores, sizeof scores) << 32));
        printf("trained %016llx\n", (unsigned long long)h);
    } else printf("%s\n", ncf_error_text());
    ncf_model_free(m);
    ncf_dataset_free(&d);
    return rc == NCF_OK || rc == NCF_ERR_NOMEM ? 0 : 1;
}

static int run_limited(long extra_mb, long nproc, int threads, char *out, size_t size)
{
    int fd[2], status = -1;
    pid_t pid;
    ssize_t got;
    if (pipe(fd) != 0) return -1;
    if ((pid = fork()) == 0) {
        char a[3][32], *args[6];
        dup2(fd[1], 1), close(fd[0]);
        snprintf(a[0], 32, "%ld", extra_mb), snprintf(a[1], 32, "%ld", nproc), snprintf(a[2], 32, "%d", threads);
        args[0] = (char *)"tests", args[1] = (char *)"--thread-limit-child", args[2] = a[0], args[3] = a[1],
        args[4] = a[2];
        args[5] = NULL;
        execv("/proc/self/exe", args);
        _exit(4);
    }
    close(fd[1]);
    got = read(fd[0], out, size - 1);
    out[got > 0 ? got : 0] = 0;
    close(fd[0]);
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

static void test_no_exit_when_threads_cannot_start(void)
{
    static const long levels[10][2] = {{2, 0},  {6, 0},  {12, 0}, {20, 0}, {40, 0},
                                       {-1, 1}, {-1, 2}, {-1, 3}, {-1, 5}, {-1, 9}};
    static const int asked[4] = {1, 2, 8, 64};
    char want[512], out[512];
    int l, t, trained = 0, nomem = 0;
    CHECK(run_limited(-1, 0, 2, want, sizeof want) == 0 && !strncmp(want, "trained ", 8));
    for (l = 0; l < 10; l++)
        for (t = 0; t < 4; t++) {
            int rc = run_limited(levels[l][0], levels[l][1], asked[t], out, sizeof out);
            CHECKF(rc == 0 && (!strcmp(out, want) || strstr(out, "out of memory")),
                   "address space +%ld MB, %ld threads allowed, %d asked: exit %d, said '%s' (alone: '%s')",
                   levels[l][0], levels[l][1], asked[t], rc, out, want);
            trained += !strcmp(out, want), nomem += strstr(out, "out of memory") != NULL;
        }
    printf("    10 limits x 1, 2, 8, 64 threads asked: %d trained, evaluated and served with the same answers bit "
           "for bit, %d said out of memory; no exit\n",
           trained, nomem);
}
#endif

#ifndef _WIN32
/* A killed save's temporary file is removed by the next save to that path; a fresh one, or
   one a live save holds locked, is not. */
static void test_orphaned_temporary_files_removed(void)
{
    ncf_model *m = NULL;
    ncf_config c = ncf_config_default();
    char path[400], dead[450], fresh[450], held[450];
    struct utimbuf old;
    int go[2], ready[2];
    pid_t pid;
    char byte = 0;
    c.num_users = 5, c.num_items = 5;
    CHECK(ncf_model_create(&m, &c) == NCF_OK);
    snprintf(path, sizeof path, "%s/orphans.ncf", g_dir);
    snprintf(dead, sizeof dead, "%s.tmp-00000000dead", path),
        snprintf(fresh, sizeof fresh, "%s.tmp-00000000f00d", path);
    snprintf(held, sizeof held, "%s.tmp-000000001eed", path);
    write_file("orphans.ncf.tmp-00000000dead", "half a model"),
        write_file("orphans.ncf.tmp-000000001eed", "a live save");
    old.actime = old.modtime = time(NULL) - 3600;
    CHECK(utime(dead, &old) == 0 && utime(held, &old) == 0);
    CHECK(pipe(go) == 0 && pipe(ready) == 0);
    if ((pid = fork()) == 0) { /* a live save: it holds its file's lock */
        struct flock lock;
        int fd = open(held, O_RDWR);
        memset(&lock, 0, sizeof lock);
        lock.l_type = F_WRLCK, lock.l_whence = SEEK_SET;
        if (fd < 0 || fcntl(fd, F_SETLK, &lock) != 0) _exit(1);
        if (write(ready[1], "r", 1) != 1 || read(go[0], &byte, 1) != 1) _exit(1);
        _exit(0);
    }
    CHECK(read(ready[0], &byte, 1) == 1);
    write_file("orphans.ncf.tmp-00000000f00d", "a save just begun");
    CHECK(ncf_save(m, path, NCF_SAVE_MODEL) == NCF_OK);
    CHECK(!ncf__file_exists(dead) && ncf__file_exists(fresh) && ncf__file_exists(held));
    CHECK(write(go[1], "g", 1) == 1);
    waitpid(pid, NULL, 0);
    remove(fresh), remove(held), remove(path);
    close(go[0]), close(go[1]), close(ready[0]), close(ready[1]);
    { /* only files named as the library names them: a user's old .tmp-backup stays */
        char backup[450];
        snprintf(backup, sizeof backup, "%s.tmp-backup", path);
        write_file("orphans.ncf.tmp-backup", "the user's own copy");
        write_file("orphans.ncf.tmp-00000000dead", "half a model");
        CHECK(utime(backup, &old) == 0 && utime(dead, &old) == 0);
        CHECK(ncf_save(m, path, NCF_SAVE_MODEL) == NCF_OK);
        CHECK(ncf__file_exists(backup) && !ncf__file_exists(dead));
        remove(backup), remove(path);
    }
    { /* a path that names a folder is refused before anything beside it is touched */
        char folder[450], inside[500];
        snprintf(folder, sizeof folder, "%s/", g_dir), snprintf(inside, sizeof inside, "%s/.tmp-00000000dead", g_dir);
        write_file(".tmp-00000000dead", "someone's file");
        CHECK(utime(inside, &old) == 0);
        CHECK_ERR(ncf_save(m, folder, NCF_SAVE_MODEL), NCF_ERR_IO, "names a folder, not a file");
        CHECK(ncf__file_exists(inside));
        remove(inside);
    }
    { /* another thread of this process saving to the same path: its file is live (its lock is
         per open file, which a lock per process, fcntl's, cannot show within one process) */
        ncf__outfile *live = NULL;
        struct utimbuf aged;
        CHECK(ncf__outfile_open(&live, path) == NCF_OK && ncf__outfile_printf(live, "the other save") == NCF_OK);
        aged.actime = aged.modtime = time(NULL) - 3600;
        CHECK(live && utime(live->name, &aged) == 0);
        CHECK(ncf_save(m, path, NCF_SAVE_MODEL) == NCF_OK);
        CHECK(live && ncf__file_exists(live->name));
        CHECKF(ncf__outfile_commit(live) == NCF_OK, "%s", ncf_error_text());
        {
            char got[64] = "";
            FILE *f = fopen(path, "rb");
            size_t n = f ? fread(got, 1, sizeof got - 1, f) : 0;
            if (f) fclose(f);
            got[n] = 0;
            CHECK(!strcmp(got, "the other save"));
        }
        remove(path);
    }
    ncf_model_free(m);
}
#endif
