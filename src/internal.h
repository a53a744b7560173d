
#include <math.h>
#include <stdarg.h>
#include <stdio.h> /* vsnprintf; FILE* only without NCF_NO_STDIO */
#include <stdlib.h>
#include <string.h>
#ifndef NCF_INFERENCE_ONLY
#include <time.h> /* the id tables' secret key */
#endif
#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(_WIN32) && (!defined(NCF_NO_STDIO) || defined(_OPENMP)) /* files; a waiting thread's nap */
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <windows.h>
#endif
#ifndef NCF_NO_STDIO /* what ncf_save needs to write a file safely */
#if defined(_WIN32)
#define NCF__PID() ((uint64_t)GetCurrentProcessId())
#elif defined(__unix__) || defined(__unix) || defined(__APPLE__)
#define NCF__POSIX_FILES 1
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dirent.h>
#include <time.h>
#if defined(NCF_MPI) && !defined(NCF_INFERENCE_ONLY)
#include <sys/mman.h> /* ncf_mpi_load: a rank reads its rows of a file, not the whole file */
#endif
#define NCF__PID() ((uint64_t)getpid())
#else
#define NCF__PID() ((uint64_t)0)
#endif
#endif

#if defined(NCF_MALLOC) && defined(NCF_REALLOC) && defined(NCF_FREE)
#elif !defined(NCF_MALLOC) && !defined(NCF_REALLOC) && !defined(NCF_FREE)
#define NCF_MALLOC(sz) malloc(sz)
#define NCF_REALLOC(p, sz) realloc(p, sz)
#define NCF_FREE(p) free(p)
#else
#error "define all of NCF_MALLOC, NCF_REALLOC and NCF_FREE, or none"
#endif

#ifndef NCF_ASSERT
#ifdef NCF_INFERENCE_ONLY /* a device: no assert text, no stderr */
#define NCF_ASSERT(x) ((void)0)
#else
#include <assert.h>
#define NCF_ASSERT(x) assert(x)
#endif
#endif

/* Bare metal (Cortex-M, a RISC-V microcontroller: an ELF target with no OS) often has no
   thread-local storage runtime, and where the startup code sets up none the first error
   text written faults: there (and on any Cortex-M, whatever its compiler's object format),
   and with NCF_NO_TLS, the error text and the few per-thread statics are plain statics. */
#if defined(__ELF__) && !defined(__unix__) && !defined(__linux__) && !defined(__APPLE__) && !defined(__ANDROID__) && \
    !defined(__Fuchsia__) && !defined(__HAIKU__) && !defined(__wasm__)
#define NCF__BARE_METAL 1
#endif
#if defined(NCF_NO_TLS) || defined(NCF__BARE_METAL) || (defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M')
#define NCF__TLS
#elif defined(__cplusplus) && __cplusplus >= 201103L
#define NCF__TLS thread_local
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__STDC_NO_THREADS__)
#define NCF__TLS _Thread_local
#elif defined(__GNUC__)
#define NCF__TLS __thread
#elif defined(_MSC_VER)
#define NCF__TLS __declspec(thread)
#else
#define NCF__TLS /* no thread-local storage: the error text is shared */
#endif

#ifdef __cplusplus
#define NCF__RESTRICT __restrict
#else
#define NCF__RESTRICT restrict
#endif

#if defined(__GNUC__) || defined(__clang__)
#define NCF__PREFETCH(p) __builtin_prefetch(p)
#else
#define NCF__PREFETCH(p) ((void)0)
#endif
/* Rows ahead that a loop over rows scattered in the tables prefetches: the tables are larger
   than the nearer caches, and a row's misses then overlap the rows before it. Two, not more:
   a wide row is many lines (the MLPerf config's, 12 in each of three arrays), and four rows
   ahead put more misses in flight than a core tracks (1.04-1.10x slower there; the paper
   config's narrow rows run the same at 2 or 4). */
#define NCF__AHEAD 2

/* OpenMP pragmas as macros so that one source serves both builds. */
#ifdef _OPENMP
#define NCF__PRAGMA(x) _Pragma(#x)
#define NCF__OMP(x) NCF__PRAGMA(omp x)
#else
#define NCF__OMP(x)
#endif

/* Work smaller than this many multiply-adds runs on one thread: a parallel
   region costs a few microseconds. */
#define NCF__PAR_WORK 32768.0f /* (scheduling sums are float: no double arithmetic on a device) */

#if defined(__GNUC__) || defined(__clang__)
#define NCF__MAYBE_UNUSED __attribute__((unused)) /* a private call some builds do not make */
#define NCF__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define NCF__MAYBE_UNUSED
#define NCF__PRINTF(f, a)
#endif

#ifndef NCF_NO_STDIO
/* Any file written whole or not at all, as ncf_save writes a model (>>safe-save): the bytes go
   to a new temporary file beside PATH, and PATH changes only at the commit, when the file has
   been flushed to the disk and is renamed over it (an existing file's permissions kept). A
   failed write is kept: later calls return it and the commit removes the temporary file.
   Commit and discard free the ncf__outfile. A killed program's temporary file is removed by
   the next open of the same PATH; no file the library did not make is ever removed. (Private:
   the demo, built with the implementation, writes its CSV, C and log files with it too.) */
typedef struct ncf__outfile ncf__outfile;
static NCF__MAYBE_UNUSED int ncf__outfile_open(ncf__outfile **out, const char *path);
static NCF__MAYBE_UNUSED int ncf__outfile_write(ncf__outfile *out, const void *buf, size_t len);
static NCF__MAYBE_UNUSED NCF__PRINTF(2, 3) int ncf__outfile_printf(ncf__outfile *out, const char *fmt, ...);
static NCF__MAYBE_UNUSED int ncf__outfile_commit(ncf__outfile *out);   /* PATH replaced, or left as it was (an error) */
static NCF__MAYBE_UNUSED void ncf__outfile_discard(ncf__outfile *out); /* PATH left as it was */
/* n outputs as one (a split's files, the embeddings' four): all or none replaced, see file.c */
static NCF__MAYBE_UNUSED int ncf__outfiles_commit(ncf__outfile **out, int n, int rc);
static const char *ncf__os_reason(void); /* the OS's reason for the last failure (file.c) */
#endif

/* Private calls that one stage makes of a later one (one translation unit: any stage may call
   any private function; these are the few that come after their first caller). */
#ifndef NCF_INFERENCE_ONLY
static int ncf__copy_text_ids(const char *text, const int64_t *at, int n, char **out, int64_t **out_at); /* serve */
static int ncf__als_epoch(ncf_model *m, const ncf_dataset *ds, ncf_progress_fn progress, void *ctx, int64_t total,
                          double *mean_loss); /* als */
#endif
static int ncf__build_id_maps(ncf_model *m); /* serve */
#ifndef NCF_INFERENCE_ONLY                   /* features */
struct ncf__features;
static void ncf__features_free(struct ncf__features *F);
static int ncf__has_features(const ncf_model *m);
static int ncf__features_train_on(const ncf_model *m);
static int ncf__features_train(ncf_model *m, const ncf_sampler *smp, int epoch, int64_t first, int64_t end,
                               ncf_progress_fn progress, void *ctx, double *sum);
static size_t ncf__features_state(const ncf_model *m, float **blocks, size_t *sizes); /* 12 blocks */
static int ncf__features_carry(ncf_model *dst, const ncf_model *src);
static int ncf__features_valid(const ncf_features *f, const char *what);
static int ncf__features_average(ncf_model *m, ncf_model *const *models, int n, float row_scale);
static uint64_t ncf__features_bytes(const ncf_model *m);
static void ncf__features_write(const ncf_model *m, uint8_t *p);
static int ncf__features_read(ncf_model *m, const uint8_t *p, uint64_t bytes);
#endif
static void ncf__refresh_gram(ncf_model *m); /* als */
