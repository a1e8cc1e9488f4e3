/* Token embedding lookup and its scatter-add gradient: the sharded kernels (ops_shard.c) with
 * the whole table owned by this rank. */
#include "lib/backend/cpu/cpu.h"

#include <limits.h>

/* out[N,C] = wte[tokens[i], :] */
void ax_cpu_embedding_forward(ax_ctx *ctx, float *out, const int32_t *tokens, const float *wte,
                              int N, int C) {
    (void)ctx;
    ax_cpu_embedding_shard_forward(ctx, out, tokens, wte, N, C, 0, INT_MAX);
}

/* dwte[V,C] += scatter of dout[N,C]; only the rows named in tokens, deterministically */
void ax_cpu_embedding_backward(ax_ctx *ctx, float *dwte, const float *dout, const int32_t *tokens,
                               int N, int C) {
    (void)ctx;
    ax_cpu_embedding_shard_backward(ctx, dwte, dout, tokens, N, C, 0, INT_MAX);
}
