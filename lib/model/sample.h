/* Sampling one token per row from a tempered, truncated softmax whose vocabulary is split over
 * ranks (the LM head's Y shards), so that every grid draws the same token as one rank.
 *
 * The draw is Gumbel-max: token = argmax over kept ids v of x_v / T + G(seed, key, v), with
 * G = -log(-log U) and U a counter-based uniform of (seed, key, v) (lib/core/rng.h). The argmax
 * of tempered logits plus independent Gumbel noise is distributed as softmax(x / T) over the
 * kept ids, and since the noise of id v depends on the global id only, each shard computes its
 * own best (value, id) and a max-reduction over the shards gives the global draw: no shard ever
 * needs the others' logits. key names the row's draw (the probe keys it by prefix length,
 * sample, draw and suffix position), so the same seed reproduces the same samples anywhere.
 *
 * Truncation needs global thresholds, found without gathering the vocabulary:
 *   top-k: tau_k = the k-th largest logit, i.e. the largest float tau with
 *          #{v : x_v >= tau} >= k;
 *   top-p: tau_p = the largest float tau >= tau_k with
 *          sum_{x_v >= tau} w_v >= p * sum_{x_v >= tau_k} w_v,  w_v = exp((x_v - max) / T)
 *          (the nucleus of the top-k-truncated distribution, as Hugging Face applies them).
 * Both sides are non-increasing step functions of tau whose steps sit on logit values, so a
 * bisection over the 2^32 float bit patterns (ordered as integers) ends, after at most 32 rounds
 * of one sum-reduction of B numbers over the shards, on the exact logit value that is the
 * threshold. Ids with x_v >= tau are kept (ties at tau all kept, the same on every grid). The
 * counts are exact; the top-p masses are sums of partial sums whose rounding depends on the
 * shard count, which can move tau only when p * mass lands within rounding of a step. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "lib/core/status.h"

typedef struct {
    double temperature; /* T > 0 */
    int top_k;          /* keep the k largest logits; 0 = no limit */
    double top_p;       /* keep the nucleus of mass p, in (0, 1]; 1 = no limit */
    uint64_t seed;
} ax_sample_params;

/* Combines n per-row partial results over the shards in place: the sum (is_max 0) or the
 * maximum (is_max 1). NULL reduction: the slice is the whole vocabulary. */
typedef ax_status (*ax_sample_reduce_fn)(void *ctx, double *buf, int n, int is_max);

/* Checks T > 0, k >= 0, 0 < p <= 1 (AX_ERR_ARG naming --temperature, --top-k, --top-p). */
ax_status ax_sample_params_check(const ax_sample_params *p);

/* The Gumbel noise G(seed, key, id) added to x_id / T. */
double ax_sample_gumbel(uint64_t seed, uint64_t key, int64_t id);

/* One draw per row of the slice x[B, ld] (first `valid` columns real, global ids from v0, V the
 * whole vocabulary) with row b keyed by keys[b]; out[B] is the same on every shard.
 * work: host scratch of 6B doubles + B * valid floats (ax_sample_work_bytes). */
size_t ax_sample_work_bytes(int B, int valid);
ax_status ax_sample_rows(const float *x, int B, long ld, int valid, int v0, int V,
                         const ax_sample_params *p, const uint64_t *keys,
                         ax_sample_reduce_fn reduce, void *rctx, void *work, int32_t *out);
