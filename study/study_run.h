/* `axmem study`: one split, several mitigations, the same scans on each, one report. From a
 * corpus (or a split given as two datasets and their tokenizer) it splits members from held-out
 * non-members, plants canaries in the members, trains one model per mitigation (the same
 * seed, steps and shape; dedup trains on the members deduplicated, dp with DP-SGD), scans each
 * with probe, generate, mia and exposure on the same members, non-members and canaries, and
 * writes one report whose comparison section sets leakage against utility. Every stage is
 * resumable (study/stage.h). The command is study/cmd_study.c; `axmem demo` runs this too. */
#pragma once
#include <stdint.h>

#include "lib/core/config.h"
#include "lib/core/status.h"
#include "study/mitigation.h"

#define AX_STUDY_MAX_REPEATS 16

typedef struct {
    char out[AX_CFG_STR_MAX];
    char corpus[AX_CFG_STR_MAX];     /* JSONL ("text") or plain text (a document a line) */
    char members[AX_CFG_STR_MAX];    /* or a split: members .axd, */
    char nonmembers[AX_CFG_STR_MAX]; /* non-members .axd, */
    char tokenizer[AX_CFG_STR_MAX];  /* and their tokenizer */
    char mitigations[AX_CFG_STR_MAX];
    int64_t steps, docs, chars, vocab_size, seq_len, batch, seed, ngram;
    double lr;
    char model[AX_CFG_STR_MAX];
    int privacy; /* canaries, mia and exposure (the demo's --no-privacy turns them off) */
    char canary_format[AX_CFG_STR_MAX], canary_repeats[AX_CFG_STR_MAX];
    int64_t per_repeat;
    int show_text;
    /* not flags: what the demo sets */
    int64_t first_doc; /* the corpus' documents from this one on (the demo skips 100) */
    const char *title; /* the report's title (NULL: the study's) */
    const char *who;   /* "study" or "demo": progress lines and run description */
} ax_study_config;

extern const ax_cfg_table ax_study_table;
/* Flags `axmem demo` shares with the study word for word (F: offsetof over ax_study_config) */
#define AX_STUDY_STEPS_ENTRY(F)                                                                    \
    { "steps", AX_CFG_INT, F(steps), "300", 1, 1e7, "training steps per model" }
// clang-format off
#define AX_STUDY_CANARY_ENTRIES(F)                                                                 \
    {"canary-format", AX_CFG_STR, F(canary_format), "my PIN is {d3}", 1, 0,                       \
     "canary text, as `axmem data canaries --format` (a small space: exact exposure)"},            \
    {"canary-repeats", AX_CFG_STR, F(canary_repeats), "1,4,16", 1, 0,                              \
     "comma-separated repeat counts of the canaries (up to 16 counts)"},                           \
    {"canaries-per-repeat", AX_CFG_INT, F(per_repeat), "2", 1, 100, "canaries per repeat count"}, \
    {"show-text", AX_CFG_BOOL, F(show_text), "false", 0, 0,                                        \
     "the report's HTML and Markdown quote memorized text and canary secrets"}
// clang-format on

typedef struct {
    int n; /* mitigations */
    ax_mitigation mit[AX_STUDY_MAX_MITIGATIONS];
    int64_t members, nonmembers, dropped, canaries;
    int stages_run, stages_skipped; /* skipped: done by an earlier run */
    char summary[AX_CFG_STR_MAX + 32], report_dir[AX_CFG_STR_MAX + 32];
} ax_study_result;

/* What `axmem study` and `axmem demo` do once c is set: check, run every stage, print the
 * summary and where the report went; returns the exit code (failures as c->who). */
int ax_study_cli(const ax_study_config *c);
/* Checks c (flags that depend on each other, the mitigation list, the canary format) before any
 * work; fills r->mit. */
ax_status ax_study_check(const ax_study_config *c, ax_study_result *r);
/* Runs every stage not done yet; ax_study_check first. An interrupted training (a stop signal)
 * returns AX_ERR_INTERRUPTED; rerunning continues from its checkpoint. */
ax_status ax_study_run(const ax_study_config *c, ax_study_result *r);

/* ---- the stages' work, shared by study_run.c (internal to study/) ---- */
/* "1,4,16" -> the counts; nonzero when it is not such a list */
int ax_study_parse_repeats(const char *s, int *out, int *n);
/* documents [first, first + n) of the corpus (JSONL "text", or a document a non-empty line),
 * each cut to chars bytes (never inside a UTF-8 character), to path as JSONL (0600) */
ax_status ax_study_subset(const char *corpus, long first, long n, size_t chars, const char *path);
ax_status ax_study_tokenizer(const char *corpus, int64_t vocab, const char *tok);
ax_status ax_study_encode(const char *tok, const char *jsonl, const char *axd);
/* data split --holdout 0.5 --seed 1 --ngram N; the counts to split_json too */
ax_status ax_study_split(const char *pool, int64_t ngram, const char *members, const char *heldout,
                         const char *split_json);
/* data canaries with the study's flags, every copy within seq_len tokens of a document's start
 * where the members have room (else anywhere) */
ax_status ax_study_canaries(const ax_study_config *c, const char *members, const char *tok,
                            const char *out, const char *secrets);
/* memscan index --n 16 */
ax_status ax_study_index(const char *axd, const char *index);
/* one model: train (resume: continue RUN's checkpoint), then the scans into RUN */
ax_status ax_study_train(const ax_study_config *c, const ax_mitigation *m, const char *data,
                         const char *val, const char *tok, const char *run, int resume);
/* probe and generate read the members as planted (data, index) for every model: for a model
 * trained on a deduplicated copy (deduped) that is knowingly not its training data, so each
 * mitigation is measured on the same text */
ax_status ax_study_probe(const char *run, const char *data, const char *tok, int64_t samples,
                         int deduped);
ax_status ax_study_generate(const char *run, const char *index, const char *tok, int deduped);
ax_status ax_study_mia(const char *run, const char *members, const char *nonmembers,
                       const char *tok);
ax_status ax_study_exposure(const char *run, const char *secrets, const char *tok);
