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
