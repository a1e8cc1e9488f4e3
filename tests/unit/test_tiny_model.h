/* The scans' tests' model: 2 layers, width 16, 2 heads, SwiGLU 24, untied, with its initial
 * weights scaled by 4 so the next-token distributions are peaked (greedy choices clear, the
 * scores' sigma far from 0). Shared by the probe, score, exposure and mia tests. */
#pragma once
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>

#include "lib/core/status.h"
#include "lib/model/model.h"

static inline ax_model_t *ts_tiny_model(int B, int T, int vocab, uint64_t seed) {
    ax_model_config c = {.n_layers = 2,
                         .dim = 16,
                         .n_heads = 2,
                         .ffn = 24,
                         .vocab = vocab,
                         .tie_embeddings = 0,
                         .rope_theta = 10000.0f,
                         .norm_eps = 1e-5f};
    ax_model_t *m = NULL;
    cr_assert_eq(ax_model_create(&c, B, T, &m), AX_OK, "%s", ax_error_msg());
    ax_model_init(m, seed);
    int64_t n = ax_model_n_local(m);
    float *p = malloc(sizeof *p * (size_t)n);
    cr_assert(p);
    cr_assert_eq(ax_model_read_params(m, p, 0, n), AX_OK);
    for (int64_t i = 0; i < n; i++) p[i] *= 4.0f;
    cr_assert_eq(ax_model_write_params(m, p, 0, n), AX_OK);
    free(p);
    return m;
}
