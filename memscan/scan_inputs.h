/* What a scan (memscan probe, generate) checks about its inputs before it builds the model:
 * whether the data it scans is the model's training data, and how long a sequence the model can
 * decode. A probe of data the model never saw, or a regurgitation scan against another corpus's
 * index, measures something else than memorization of the training data; data encoded by
 * another tokenizer makes every number meaningless. */
#pragma once
#include <stdint.h>

#include "lib/ckpt/ckpt.h"
#include "lib/core/json.h"
#include "lib/core/status.h"

/* What the checkpoint records of its training data. */
typedef struct {
    int known;          /* the state records the dataset's checksum (imported models do not) */
    uint64_t xxh3;      /* that checksum (the dataset's identity, ax_axd_checksum) */
    uint64_t tokenizer; /* its tokenizer's identity, read from the header of the dataset file at
                           the recorded path when that file has this checksum (0: unknown) */
    char path[4096];    /* the recorded path ("" when none) */
} ax_ms_train_data;

/* The data a scan reads, and what its settings accept. */
typedef struct {
    char what[8400];       /* how messages name it: "--data FILE", "the dataset of --index ..." */
    const char *cmd;       /* "probe" or "generate": its settings named in the messages */
    uint64_t xxh3;         /* the dataset's checksum */
    uint64_t tokenizer;    /* the identity of the tokenizer that encoded it (0: unknown) */
    int not_training_data; /* --not-training-data: other data is meant (held-out, a corpus) */
    int other_tokenizer;   /* --allow-other-tokenizer: data of another tokenizer is meant */
    int refuse_other;      /* other data needs --not-training-data (generate); else a warning */
} ax_ms_scan_data;

/* Compares the scan's data with the checkpoint's training data: *verdict = 1 (the same
 * checksum), 0 (other data) or -1 (the checkpoint records none: nothing to compare). Refuses
 * (AX_ERR_MISMATCH, naming both) data whose tokenizer differs from the training data's unless
 * other_tokenizer, and other data under refuse_other unless not_training_data; other data that
 * is allowed is warned about on stderr (rank 0) unless not_training_data says it is meant. */
ax_status ax_ms_check_scan_data(const ax_ckpt_t *ck, const ax_ms_scan_data *sd,
                                ax_ms_train_data *td, int *verdict);

/* Into the scan object being written: "data_is_training_data" (true, false, or null when the
 * checkpoint records no training data), "training_data" ({path, xxh3, tokenizer} or null) and
 * "data_tokenizer" (the scanned data's tokenizer identity, or null). */
void ax_ms_scan_data_json(ax_jw *w, const ax_ms_train_data *td, const ax_ms_scan_data *sd,
                          int verdict);

/* The positions the checkpoint's model can decode over: the rows of a learned position table
 * (max-pos), else what its config records it was made for (max-positions of an imported model,
 * seq-len of a trained one, or, for a run fine-tuned with --init, the larger context of the
 * checkpoint it started from when that can be opened); 0 when it records nothing. *source
 * names where the number came from. */
ax_status ax_ms_model_context(const ax_ckpt_t *ck, int *positions, const char **source);
