/* The two mitigations that change what or how a model trains beyond the train config's goldfish
 * field: deduplication of the training set (index/dedup_run.h, `axmem data dedup`) and DP-SGD
 * (the train config's dp fields, `axmem train --dp-*`). */
#pragma once
#include <stdint.h>

#include "lib/core/status.h"
#include "study/mitigation.h"
#include "train/train_config.h"

/* dedup:N: the dataset in with every repeated span of >= n tokens removed but its first copy,
 * to out (0600), the summary beside it (summary_json) */
ax_status ax_study_dedup(const char *in, int64_t n, const char *out, const char *summary_json);
/* dp:...: DP-SGD settings into the training config c (clip, epsilon or noise, delta); each of
 * the n_examples training documents is sampled at rate batch / n_examples, or at every step
 * when the batch holds them all */
ax_status ax_study_dp_config(ax_train_config *c, const ax_mitigation *m, uint64_t n_examples);
