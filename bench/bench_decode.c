/* KV-cached decoding (memscan probe / generate) of a GPT-2-124M-shaped model: tokens/s at a
 * batch of B sequences, against the lower bound measured in the same run: each step must read
 * every weight once (memory bandwidth) and do 2 * params FLOPs per token (GEMM rate), so
 * bound = max(weight bytes / bandwidth, flops / GEMM rate). Reports bound / measured.
 * Usage: bench_decode [B=32] [positions=64]   (threads from OMP_NUM_THREADS) */
#include "lib/model/model.h"
#include "lib/backend/cpu/perf.h"
#include "lib/core/timer.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int B = argc > 1 ? atoi(argv[1]) : 32, P = argc > 2 ? atoi(argv[2]) : 64;
    if (B < 1 || P < 2) {
        fprintf(stderr, "usage: bench_decode [B>=1] [positions>=2]\n");
        return 2;
    }
    ax_model_config c = {.n_layers = 12,
                         .dim = 768,
                         .n_heads = 12,
                         .ffn = 2048,
                         .vocab = 50257,
                         .tie_embeddings = 1,
                         .rope_theta = 10000.0f,
                         .norm_eps = 1e-5f};
    ax_model_t *m = NULL;
    if (ax_model_create(&c, (B + P - 1) / P, P, &m) != AX_OK ||
        ax_model_decode_begin(m, B) != AX_OK) {
        fprintf(stderr, "bench_decode: %s\n", ax_error_msg());
        return 1;
    }
    ax_model_init(m, 1);
    int32_t *tok = malloc(sizeof(int32_t) * (size_t)B);
    for (int b = 0; b < B; b++) tok[b] = 1000 + b;
    ax_model_decode_step(m, tok, 0); /* warm-up: gathers, first touch */
    double t0 = ax_now();
    for (int pos = 1; pos < P; pos++) {
        ax_model_decode_step(m, tok, pos);
        ax_model_decode_argmax(m, tok);
    }
    double dt = ax_now() - t0, per_step = dt / (P - 1);
    double params = (double)ax_model_n_params(m);
    double gemm = ax_perf_sgemm_gflops(2048, 2048, 2048, 3) * 1e9;
    double bw = ax_perf_memcpy_gbps((size_t)256 << 20, 3) * 1e9;
    double t_bw = params * 4 / bw, t_flop = 2 * params * B / gemm;
    double bound = t_bw > t_flop ? t_bw : t_flop;
    printf("bench_decode: gpt2-124m-shaped, batch %d, %d positions, %d threads\n", B, P,
           omp_get_max_threads());
    printf("  %.1f ms per step, %.0f tokens/s\n", 1e3 * per_step, B / per_step);
    printf("  bound %.1f ms (weights %.0f MB at %.1f GB/s: %.1f ms; %.1f GFLOP at %.0f GFLOP/s: "
           "%.1f ms)\n",
           1e3 * bound, params * 4 / 1e6, bw / 1e9, 1e3 * t_bw, 2 * params * B / 1e9, gemm / 1e9,
           1e3 * t_flop);
    printf("  ratio bound/measured = %.3f\n", bound / per_step);
    free(tok);
    ax_model_free(m);
    return 0;
}
