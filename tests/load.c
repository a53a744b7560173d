/* tests/load.c - make bench-load's program: one load of a ratings file (min_ratings 20) and
   its time and peak memory, as the tail of a JSON line. Built against this ncf.h and, with
   BASE=REV, against REV's (-I), each load in a fresh process. */
#define _POSIX_C_SOURCE 200809L
#define NCF_IMPLEMENTATION
#include "ncf.h"
#include "compat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv)
{
    ncf_dataset d;
    ncf_dataset_opts o = ncf_dataset_opts_default();
    struct timespec a, b;
    char line[256];
    double kb = 0;
    FILE *f;
    int rc;
    if (argc < 2) return 2;
    o.min_ratings = 20;
    clock_gettime(CLOCK_MONOTONIC, &a);
    rc = ncf_load_dataset(&d, argv[1], &o);
    clock_gettime(CLOCK_MONOTONIC, &b);
    if (rc) {
        fprintf(stderr, "%s\n", ncf_error_text());
        return 1;
    }
    f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6)) kb = atof(line + 6);
    if (f) fclose(f);
    printf("\"load_s\":%.2f,\"peak_rss_mb\":%.0f,\"users\":%d,\"items\":%d}\n",
           (double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec), kb / 1024, d.num_users, d.num_items);
    ncf_dataset_free(&d);
    return 0;
}
