/* The mitigations `axmem study` compares, parsed from one list:
 *   none                            the baseline: the training set as it is, plain loss
 *   goldfish:SPEC                   goldfish loss (SPEC as `axmem train --goldfish`)
 *   dedup:N                         the training set with every repeated span of >= N tokens
 *                                   removed but its first copy (`axmem data dedup --n N`)
 *   dp:eps=E[,delta=D][,clip=C]     DP-SGD to (E, D)-differential privacy per example, or
 *   dp:noise=S[,delta=D][,clip=C]   with noise multiplier S (epsilon from the accountant)
 * Items are separated by commas; a piece that does not start with a kind (none, goldfish:,
 * dedup:, dp:) continues the item before it, so "goldfish:hash:k=4,h=13,dp:eps=8,delta=1e-6"
 * is two items. */
#pragma once
#include <stdint.h>

#include "lib/core/status.h"

#define AX_STUDY_MAX_MITIGATIONS 16
#define AX_STUDY_SPEC_MAX 128
#define AX_STUDY_LABEL_MAX 32

typedef enum { AX_MIT_NONE, AX_MIT_GOLDFISH, AX_MIT_DEDUP, AX_MIT_DP } ax_mitigation_kind;

typedef struct {
    ax_mitigation_kind kind;
    char spec[AX_STUDY_SPEC_MAX];     /* the item as given, e.g. "dp:eps=8,delta=1e-5" */
    char label[AX_STUDY_LABEL_MAX];   /* its run folder and report label: baseline, goldfish, dedup,
                                         dp; "-2", "-3" ... for a kind's later items */
    char goldfish[AX_STUDY_SPEC_MAX]; /* the goldfish spec ("none" unless goldfish) */
    int64_t dedup_n;                  /* dedup: the span length */
    double dp_epsilon;                /* dp: the target epsilon; 0 with dp_noise */
    double dp_noise;                  /* dp: the noise multiplier; 0 with dp_epsilon */
    double dp_delta, dp_clip;         /* dp: defaults AX_STUDY_DP_DELTA, AX_STUDY_DP_CLIP */
} ax_mitigation;

#define AX_STUDY_DP_DELTA 1e-5
#define AX_STUDY_DP_CLIP 1.0

/* Parses the list into out[*n]. Errors (AX_ERR_ARG) name --mitigations, the bad item and what
 * is wrong: an unknown kind, a bad goldfish spec (the goldfish parser's message), N not a whole
 * number in 1..65536, an unknown dp key, eps and noise both or neither, a value out of range, an
 * item given twice, more than AX_STUDY_MAX_MITIGATIONS items. */
ax_status ax_study_parse_mitigations(const char *list, ax_mitigation *out, int *n);
