/* `axmem demo`: the main job end to end on the bundled corpus, as `axmem study` runs it
 * (study/study_run.h) with the demo's settings: train a tokenizer, split a pool of documents at
 * random into a "memorization set" (the goldfish paper's extreme setting: a few dozen documents
 * seen for many epochs) and held-out non-members, plant canaries in the memorization set, train
 * a model per mitigation (a baseline, goldfish loss, deduplicated training data, DP-SGD), probe
 * each for extractable memorization, attack each (membership inference, canary exposure), and
 * write a report a person can read. This file only sets the demo's flags. */
#include "cli/commands.h"
#include "lib/core/cliargs.h"
#include "lib/core/config.h"
#include "study/study_run.h"

#include <stddef.h>

/* flags straight into the study's settings, over the study's defaults */
#define F(field) offsetof(ax_study_config, field)
static const ax_cfg_entry entries[] = {
    AX_CFG_OUT_ENTRY(F, "runs/demo", "output folder (a rerun resumes where the last one stopped)"),
    {"corpus", AX_CFG_STR, F(corpus), "data/corpus/kjv.jsonl", 1, 0,
     "JSONL corpus (one document per line, \"text\" field)"},
    {"mitigations", AX_CFG_STR, F(mitigations), "none,goldfish:hash:k=4,h=13,dedup:8,dp:eps=8", 1,
     0, "the models to train and compare, as `axmem study --mitigations`"},
    AX_STUDY_STEPS_ENTRY(F),
    {"docs", AX_CFG_INT, F(docs), "32", 1, 500,
     "documents in the memorization set (and as many drawn as held-out)"},
    {"vocab-size", AX_CFG_INT, F(vocab_size), "2048", 257, 1 << 22, "tokenizer vocabulary"},
    {"privacy", AX_CFG_BOOL, F(privacy), "true", 0, 0,
     "canaries, membership inference and exposure (--no-privacy skips them)"},
    AX_STUDY_CANARY_ENTRIES(F),
};
#undef F

static const ax_cfg_table table = {
    .usage = "axmem demo [flags]",
    .summary =
        "The main job on the bundled public-domain corpus (KJV, one document per chapter), as\n"
        "`axmem study` runs it:\n"
        "  1. trains a byte-level BPE tokenizer on the whole corpus;\n"
        "  2. encodes 2N chapters (first 500 characters each) and splits them at random into\n"
        "     N members (the memorization set) and N held-out non-members, dropping held-out\n"
        "     chapters that share a run of >= 32 tokens with the members (data split);\n"
        "  3. plants canaries (--canary-format, --canaries-per-repeat of them at each of\n"
        "     --canary-repeats) between sentences of random members, within the 160 tokens\n"
        "     training reads of a document (data canaries --within 160; secrets in\n"
        "     DIR/secrets.json, mode 0600);\n"
        "  4. trains a model per mitigation for many epochs on the members (one document per\n"
        "     sequence, the same seed, steps and shape), validating on the held-out set: a\n"
        "     baseline, goldfish loss (hash:k=4,h=13), the members deduplicated (dedup:8)\n"
        "     and DP-SGD (dp:eps=8, delta 1e-5);\n"
        "  5. indexes the training set (memscan index) and probes every model: 32-token\n"
        "     prefix -> greedy 32-token suffix, exact match (memscan probe), and free\n"
        "     generations slid over the index for verbatim spans (memscan generate);\n"
        "  6. attacks every model: membership inference, members vs held-out (memscan mia:\n"
        "     loss, zlib, min-k%, min-k%++; ROC AUC with a bootstrap interval; beside them the\n"
        "     model-free baselines, zlib bits per byte and length, which read no model), and\n"
        "     canary exposure by repeat count, exact over the format's space (memscan exposure);\n"
        "  7. writes DIR/summary.md and the report DIR/report/report.{html,md,json}: the\n"
        "     scans' numbers and charts, the mitigations compared (leakage against held-out\n"
        "     loss, epsilon for DP-SGD), membership ROC curves, exposure by repeat count (no\n"
        "     memorized text and no secret in the report without --show-text, none ever in\n"
        "     the summary).\n"
        "--no-privacy skips steps 3 and 6 (the held-out set still validates). A rerun with the\n"
        "same DIR skips the stages already complete (DIR/stages/).",
    .entries = entries,
    .n = (int)(sizeof entries / sizeof entries[0]),
};

int ax_cmd_demo(int argc, char **argv) {
    ax_study_config c;
    if (ax_cfg_set_defaults(&ax_study_table, &c) != AX_OK) return ax_cli_fail("demo", AX_ERR_ARG);
    int rc = ax_cli_parse("demo", &table, &c, argc, argv, NULL);
    if (rc >= 0) return rc;
    c.first_doc = 100; /* past Genesis' genealogies */
    c.title = "axmem demo: goldfish loss, deduplication and DP-SGD against memorization";
    c.who = "demo";
    return ax_study_cli(&c);
}
