/* tests/compat.h - what the benchmarks that build against another commit's ncf.h (make bench
   BASE=REV: tests/ab.c, small.c, load.c) need to compile against an ncf.h before 0.8, whose
   names 0.8 changed (CHANGELOG.md has the table). Included after ncf.h. */
#if NCF_VERSION_MAJOR == 0 && NCF_VERSION_MINOR < 8
#define ncf_dataset_opts ncf_load_opts
#define ncf_dataset_opts_default ncf_load_opts_default
#define ncf_evaluate ncf_evaluate_with /* (ncf_eval_opts; 0.3 to 0.7) */
#endif
