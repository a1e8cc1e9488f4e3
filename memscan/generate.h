/* Free generation for the regurgitation scan: sample sequences from a model (temperature,
 * top-k, seeded per sample and position so every rank and grid draws the same), KV-cached and
 * batched, spread over the grid's batch ranks. */
#pragma once
#include <stdint.h>
#include "lib/model/model.h"
#include "lib/core/status.h"

typedef struct {
    int samples, length, batch;
    double temperature; /* 0 = greedy */
    int top_k;          /* 0 = whole vocabulary */
    uint64_t seed;
    int32_t start_token; /* every generation starts after this token (end-of-text) */
} ax_generate_config;

/* out[samples * length]: every generation, on every rank. The model needs T >= length.
 * Collective. */
ax_status ax_generate(ax_model_t *m, const ax_generate_config *c, int32_t *out);

/* The k-th largest of a[0..n) (1 <= k <= n) as a descending sort would place it; reorders a. */
float ax_kth_largest(float *a, int n, int k);
/* Picks a token from logits[V] (temperature, top-k) with the uniform draw u in [0, 1).
 * scratch: V floats. Deterministic: the same logits and u give the same token. */
int32_t ax_sample_token(const float *logits, int V, double temperature, int top_k, double u,
                        float *scratch);
