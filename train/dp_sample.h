/* Poisson sampling for DP-SGD: at every step each example joins the batch independently with
 * probability q, so the batch size varies (what the privacy accountant assumes; a fixed-size
 * shuffled batch would not be covered by its bound).
 *
 * The draw for (seed, step, example) is a pure function of the three (a counter-based
 * generator, lib/core/rng.h), so every rank computes the whole step's sample by itself and
 * every grid trains on the same examples. The sampled examples, in increasing order, are laid
 * out over micro-batches and the ranks that split the batch exactly as a fixed batch is
 * (train/train_run.c): position k of the step's list goes to micro-batch k / (B * P), batch
 * rank (k / B) % P, row k % B, for B rows per rank and P batch ranks; positions past the end
 * are padding rows (no supervised target), so every rank runs the same number of
 * micro-batches. */
#pragma once
#include <stdint.h>

#include "lib/core/status.h"

/* 1 when example `example` is in step `step`'s sample at rate q (0 <= q <= 1). */
int ax_dp_sampled(uint64_t seed, int64_t step, uint64_t example, double q);

/* The step's sample: the examples in [0, n_examples) drawn at rate q, in increasing order, into
 * *list (grown with realloc; *cap its capacity in entries) and their count into *n. */
ax_status ax_dp_sample_step(uint64_t seed, int64_t step, uint64_t n_examples, double q,
                            int64_t **list, int64_t *cap, int64_t *n);

/* Micro-batches of B rows per rank over P batch ranks that hold n sampled examples: at least
 * one (a step that sampled nothing still reduces its zero gradient and adds the noise). */
int64_t ax_dp_micro_count(int64_t n, int B, int P);

/* The position in the step's list of row `row` of micro-batch `micro` on batch rank `part`,
 * or -1 for a padding row (the position is n or more). */
int64_t ax_dp_row_position(int64_t n, int B, int P, int64_t micro, int part, int row);
