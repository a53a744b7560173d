/* tests/fixture.c - the portable fixture as a program: fixture --write DIR (a full build, on
   this machine) writes two model files and their answers; fixture --check DIR (any build:
   NCF_INFERENCE_ONLY, other CPUs under qemu, Windows under wine) checks them. Prints
   "N passed, N failed" last, as every suite does. */
#include "harness.h"
#include "fixture.h"

int main(int argc, char **argv)
{
#ifndef NCF_INFERENCE_ONLY
    if (argc == 3 && !strcmp(argv[1], "--write")) return write_fixture(argv[2]) ? 0 : 1;
#endif
    if (argc != 3 || strcmp(argv[1], "--check")) {
        fprintf(stderr, "usage: %s --write DIR | --check DIR\n", argv[0]);
        return 2;
    }
    printf("ncf.h %s%s: the fixture\n", ncf_version(),
#ifdef NCF_INFERENCE_ONLY
           ", NCF_INFERENCE_ONLY"
#else
           ""
#endif
    );
    check_fixture(argv[2]);
    printf(g_failed_checks ? "  FAILED\n0 passed, 1 failed\n" : "  ok\n1 passed, 0 failed\n");
    return g_failed_checks ? 1 : 0;
}
