/* Document scoring (memscan mia / exposure: log p of every target plus mu and sigma of log p
 * over the full vocabulary) of a GPT-2-124M-shaped model: documents/s and tokens/s, against
 * the forward pass's FLOP ceiling measured in the same run (forward FLOPs = 1/3 of the
 * training FLOPs per token, at the rate of a 2048^3 GEMM), and against a plain forward.
 * Reports ceiling / measured for both. The scoring is one call over reps x B documents, as
 * memscan mia scores a whole set (the logits buffer is allocated once, not per round). The GEMM
 * ceiling is the higher of a reading before and after the runs. Usage: bench_score [B=4]
 * [T=128] [reps=3] */
#include "bench/support/perf.h"
#include "lib/core/rng.h"
#include "lib/core/timer.h"
#include "bench/bench_model.h"
#include "lib/model/model.h"
#include "memscan/score.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int B = argc > 1 ? atoi(argv[1]) : 4, T = argc > 2 ? atoi(argv[2]) : 128,
        reps = argc > 3 ? atoi(argv[3]) : 3;
    if (B < 1 || T < 2 || reps < 1) {
        fprintf(stderr, "usage: bench_score [B>=1] [T>=2] [reps>=1]\n");
        return 2;
    }
    ax_model_config c = bench_gpt2_small(50257);
    ax_model_t *m = NULL;
    if (ax_model_create(&c, B, T, &m) != AX_OK) {
        fprintf(stderr, "bench_score: %s\n", ax_error_msg());
        return 1;
    }
    ax_model_init(m, 1);
    int n = B * reps; /* documents scored: reps rounds of B */
    int32_t *tok = malloc(sizeof(int32_t) * (size_t)n * (T + 1)), *tg = tok; /* tg: any ids */
    uint8_t *mask = calloc((size_t)B * T, 1);
    const int32_t **ptr = malloc(sizeof *ptr * (size_t)n);
    int *len = malloc(sizeof(int) * (size_t)n);
    for (long i = 0; i < (long)n * (T + 1); i++)
        tok[i] = (int32_t)ax_rng_below(1, 0, (uint64_t)i, 50000);
    for (int b = 0; b < n; b++) ptr[b] = tok + (size_t)b * (T + 1), len[b] = T + 1;
    ax_score_opts o = {.T = T, .batch = B, .want_dist = 1};
    ax_score_result r;
    ax_model_forward(m, tok, tg, mask, B, 1.0f, 0); /* warm-up: gathers, first touch */
    double gemm0 = ax_perf_sgemm_gflops(2048, 2048, 2048, 3) * 1e9;
    double t0 = ax_now();
    for (int i = 0; i < reps; i++) ax_model_forward(m, tok, tg, mask, B, 1.0f, 0);
    double t_fwd = (ax_now() - t0) / reps;
    t0 = ax_now();
    if (ax_score_seqs(m, n, ptr, len, &o, &r) != AX_OK) {
        fprintf(stderr, "bench_score: %s\n", ax_error_msg());
        return 1;
    }
    ax_score_result_free(&r);
    double t_score = (ax_now() - t0) / reps; /* a round of B documents */
    double flops = ax_model_flops_per_token(&c, T) / 3 * B * T;
    double gemm1 = ax_perf_sgemm_gflops(2048, 2048, 2048, 3) * 1e9;
    double gemm = gemm0 > gemm1 ? gemm0 : gemm1, ceil_s = flops / gemm;
    printf("bench_score: gpt2-124m-shaped, %d documents of %d tokens, %d threads\n", B, T,
           omp_get_max_threads());
    printf("  scoring %.0f ms a round of %d (%d documents in one call): %.2f documents/s, %.0f "
           "tokens/s; plain forward %.0f ms\n",
           1e3 * t_score, B, n, B / t_score, B * T / t_score, 1e3 * t_fwd);
    printf("  ceiling %.0f ms (%.1f GFLOP at %.0f GFLOP/s; GEMM %.0f before, %.0f after)\n",
           1e3 * ceil_s, flops / 1e9, gemm / 1e9, gemm0 / 1e9, gemm1 / 1e9);
    printf("  ratio ceiling/scoring = %.3f (ceiling/forward = %.3f)\n", ceil_s / t_score,
           ceil_s / t_fwd);
    free(tok), free(mask), free(ptr), free(len);
    ax_model_free(m);
    return 0;
}
