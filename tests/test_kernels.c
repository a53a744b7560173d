/* tests/test_kernels.c - the kernels: every GEMM path against its definition. Included by tests.c (one program). */
/* ---- >>kernels: every GEMM path against its definition --------------------------------------- */

/* Every GEMM path (full register tiles, narrow and half-width edges, the last rows of a range
   as a tile overlapping the one before, the scalar tail, k blocks past NCF__KC, each flag)
   against the definition, bit for bit: each output summed in ascending k from its start (C,
   the bias or 0) with NCF__MADD, NCF__ADD adding C once at the end, and the ReLU as x < 0 ? 0 :
   x, which keeps NaN and -0. Row 1 of A is all -0 (with a bias of -0 its outputs are -0) and
   row 2 holds a NaN. A range that starts a tile in leaves the rows before it as they were.
   Ranges of NCF__PACK_TILES tiles and more whose panels of B span more than NCF__PACK_SPAN
   floats read them copied (M 3 MR + 1 with N 64 or 70 and K 100, or K 300's first block). */
static void test_every_gemm_path_matches_its_definition(void)
{
    static const int Ms[] = {1, 3, 8, 13, 2 * NCF__MR + 1, 3 * NCF__MR + 1}, Ns[] = {3, 8, 16, 24, 40, 64, 70},
                     Ks[] = {1, 7, 100, 300};
    static const int flags[] = {0, NCF__ACC, NCF__RELU, NCF__ADD | NCF__RELU, NCF__ACC | NCF__RELU};
    enum { MMAX = 3 * NCF__MR + 1, NMAX = 70, KMAX = 300 };
    static float A[MMAX * KMAX], B[KMAX * NMAX], bias[NMAX], C0[MMAX * NMAX], C[MMAX * NMAX], R[MMAX * NMAX];
    int mi, ni, ki, f, i, j, k, bad = 0, cases = 0, nan_kept = 0, negzero_kept = 0;
    uint64_t x = 99;
    for (i = 0; i < MMAX * KMAX; i++)
        x = x * 6364136223846793005ull + 1, A[i] = (float)((x >> 40) % 2001) / 1000.0f - 1.0f;
    for (i = 0; i < KMAX * NMAX; i++)
        x = x * 6364136223846793005ull + 1, B[i] = (float)((x >> 40) % 2001) / 1000.0f - 1.0f;
    for (i = 0; i < MMAX * NMAX; i++)
        x = x * 6364136223846793005ull + 1, C0[i] = (float)((x >> 40) % 2001) / 1000.0f - 1.0f;
    for (j = 0; j < NMAX; j++) bias[j] = j % 3 ? 0.25f * (float)(j % 5) - 0.5f : -0.0f;
    for (k = 0; k < KMAX; k++) A[1 * KMAX + k] = -0.0f, A[2 * KMAX + k] = k == 3 ? NAN : A[2 * KMAX + k];
    for (mi = 0; mi < 6; mi++)
        for (ni = 0; ni < 7; ni++)
            for (ki = 0; ki < 4; ki++)
                for (f = 0; f < 5; f++) {
                    int M = Ms[mi], N = Ns[ni], K = Ks[ki], fl = flags[f];
                    for (i = 0; i < M; i++)
                        for (j = 0; j < N; j++) {
                            float acc = fl & NCF__ACC ? C0[i * N + j] : bias[j];
                            for (k = 0; k < K; k++) acc = NCF__MADD(A[i * KMAX + k], B[k * N + j], acc);
                            if (fl & NCF__ADD) acc = C0[i * N + j] + acc;
                            R[i * N + j] = (fl & NCF__RELU) && acc < 0.0f ? 0.0f : acc;
                        }
                    memcpy(C, C0, sizeof(float) * (size_t)M * N);
                    ncf__gemm_rows(C, N, A, KMAX, 1, B, N, fl & NCF__ACC ? NULL : bias, 0, M, N, K, fl);
                    cases++;
                    for (i = 0; i < M * N; i++) {
                        if (memcmp(&C[i], &R[i], sizeof(float))) {
                            if (bad++ < 3)
                                printf("    M %d N %d K %d flags %d: C[%d] %.9g, the definition %.9g\n", M, N, K, fl, i,
                                       C[i], R[i]);
                        }
                        if ((fl & NCF__RELU) && i / N == 2 && C[i] != C[i]) nan_kept++;
                        if ((fl & NCF__RELU) && !(fl & (NCF__ACC | NCF__ADD)) && i / N == 1 && bias[i % N] == 0.0f &&
                            signbit(bias[i % N]) && signbit(C[i]))
                            negzero_kept++;
                    }
                    if (M <= NCF__MR) continue;
                    memcpy(C, C0, sizeof(float) * (size_t)M * N); /* rows [NCF__MR, M) only */
                    ncf__gemm_rows(C, N, A, KMAX, 1, B, N, fl & NCF__ACC ? NULL : bias, NCF__MR, M, N, K, fl);
                    cases++;
                    for (i = 0; i < M * N; i++)
                        if (memcmp(&C[i], i / N < NCF__MR ? &C0[i] : &R[i], sizeof(float)) && bad++ < 3)
                            printf("    M %d N %d K %d flags %d, rows from %d: C[%d] %.9g\n", M, N, K, fl, NCF__MR, i,
                                   C[i]);
                }
    CHECKF(bad == 0, "%d outputs differ from the definition", bad);
    CHECK(nan_kept > 0 && negzero_kept > 0); /* the special values did reach the ReLU */
    printf("    %d cases, %d outputs unlike the definition; the ReLU passed %d NaN and %d -0\n", cases, bad, nan_kept,
           negzero_kept);
}
