/* `axmem study`'s settings table (flags, --help, --config files) and the checks made before any
 * work. */
#include "data/canary.h"
#include "lib/core/cliargs.h"
#include "lib/core/log.h"
#include "study/study_mitigate.h"
#include "study/study_run.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define F(field) offsetof(ax_study_config, field)
static const ax_cfg_entry entries[] = {
    AX_CFG_OUT_ENTRY(F, "runs/study", "output folder (a rerun with the same folder resumes)"),
    {"corpus", AX_CFG_STR, F(corpus), "", 1, 0,
     "corpus to split: JSONL (one document per line, \"text\" field) or plain text (one document "
     "per non-empty line)"},
    {"members", AX_CFG_STR, F(members), "", 1, 0,
     "instead of --corpus, an existing split: the members (.axd)"},
    {"nonmembers", AX_CFG_STR, F(nonmembers), "", 1, 0, "the held-out non-members (.axd)"},
    AX_CFG_TOKENIZER_ENTRY(F, "the split's tokenizer (with --members); with --corpus, one to use "
                              "instead of training one"),
    {"mitigations", AX_CFG_STR, F(mitigations), "none,goldfish:hash:k=4,h=13", 1, 0,
     "comma-separated: none, goldfish:SPEC, dedup:N, dp:eps=E[,delta=D][,clip=C] or "
     "dp:noise=S[,delta=D][,clip=C]"},
    AX_STUDY_STEPS_ENTRY(F),
    {"docs", AX_CFG_INT, F(docs), "32", 1, 100000,
     "--corpus: documents in the member set (2x drawn, half held out)"},
    {"chars", AX_CFG_INT, F(chars), "500", 1, 1e7,
     "--corpus: characters kept of each document (its start)"},
    {"vocab-size", AX_CFG_INT, F(vocab_size), "2048", 257, 1 << 22,
     "--corpus: the tokenizer's vocabulary"},
    {"ngram", AX_CFG_INT, F(ngram), "32", 1, 65536,
     "--corpus: held-out documents sharing a run of this many tokens with a member are dropped"},
    {"seq-len", AX_CFG_INT, F(seq_len), "160", 8, 1 << 20,
     "training sequence length (one document per sequence; canaries within it)"},
    {"batch", AX_CFG_INT, F(batch), "16", 1, 1 << 20, "sequences per step"},
    {"lr", AX_CFG_FLOAT, F(lr), "3e-3", 0, 10, "peak learning rate"},
    {"model", AX_CFG_STR, F(model), "tiny", 1, 0, "model preset (axmem train --model)"},
    AX_CFG_SEED_ENTRY(F, "1234", "training seed, the same for every mitigation (train's default)"),
    {"privacy", AX_CFG_BOOL, F(privacy), "true", 0, 0,
     "canaries, membership inference and exposure (--no-privacy: extraction only)"},
    AX_STUDY_CANARY_ENTRIES(F),
};
#undef F

const ax_cfg_table ax_study_table = {
    .usage = "axmem study [flags]",
    .summary =
        "Compares memorization mitigations on one split, with the same scans:\n"
        "  1. --corpus: trains a tokenizer (or uses --tokenizer), takes 2x--docs documents\n"
        "     (their first --chars characters) and splits them at random into members and\n"
        "     held-out non-members (data split --ngram); or takes --members, --nonmembers and\n"
        "     --tokenizer as they are;\n"
        "  2. plants canaries in the members (data canaries) and indexes that training set;\n"
        "  3. for each of --mitigations trains a model with the same seed, steps and shape:\n"
        "     none (the baseline), goldfish:SPEC (goldfish loss), dedup:N (on the training set\n"
        "     with repeated spans of >= N tokens removed, data dedup), dp:eps=E (DP-SGD to\n"
        "     (E, delta)-DP per training example);\n"
        "  4. scans every model on the same members, non-members and canaries: extraction\n"
        "     (memscan probe), verbatim spans in free text (memscan generate), membership\n"
        "     inference beside the model-free baselines (memscan mia) and canary exposure\n"
        "     by repeat count (memscan exposure);\n"
        "  5. writes OUT/summary.md and OUT/report/report.{html,md,json}: per mitigation,\n"
        "     leakage against held-out loss with intervals, a privacy-utility chart, epsilon\n"
        "     for DP runs.\n"
        "Each stage prints a line; a rerun with the same --out skips the stages whose outputs\n"
        "are complete (OUT/stages/) and continues an interrupted training from its checkpoint.",
    .entries = entries,
    .n = (int)(sizeof entries / sizeof entries[0]),
};

/* "1,4,16" -> the counts; nonzero when it is not such a list */
int ax_study_parse_repeats(const char *s, int *out, int *n) {
    *n = 0;
    for (const char *p = s;;) {
        size_t len = strcspn(p, ",");
        char one[32];
        int64_t v = 0;
        snprintf(one, sizeof one, "%.*s", (int)(len < 31 ? len : 31), p);
        if (len == 0 || len > 30 || ax_parse_i64(one, &v) != 1 || v < 1 || v > 100000 ||
            *n == AX_STUDY_MAX_REPEATS)
            return 1;
        out[(*n)++] = (int)v;
        if (!p[len]) return 0;
        p += len + 1;
    }
}

ax_status ax_study_check(const ax_study_config *c, ax_study_result *r) {
    memset(r, 0, sizeof *r);
    int split = c->members[0] || c->nonmembers[0];
    if (!c->corpus[0] && !split)
        return ax_errorf(AX_ERR_ARG, "give --corpus FILE, or --members, --nonmembers and "
                                     "--tokenizer (an existing split)");
    if (c->corpus[0] && split)
        return ax_errorf(AX_ERR_ARG, "--corpus and --members/--nonmembers are alternatives; give "
                                     "one");
    if (split && (!c->members[0] || !c->nonmembers[0] || !c->tokenizer[0]))
        return ax_errorf(AX_ERR_ARG, "an existing split needs --members, --nonmembers and "
                                     "--tokenizer (the tokenizer that encoded them)");
    int reps[AX_STUDY_MAX_REPEATS], n_reps;
    if (c->privacy && ax_study_parse_repeats(c->canary_repeats, reps, &n_reps))
        return ax_errorf(AX_ERR_ARG,
                         "--canary-repeats '%s' is not a list of 1 to %d counts in 1..100000, "
                         "e.g. 1,4,16",
                         c->canary_repeats, AX_STUDY_MAX_REPEATS);
    ax_canary_format fmt;
    if (c->privacy && ax_canary_format_parse(c->canary_format, &fmt) != AX_OK) {
        char why[1024]; /* copied before a new message replaces it */
        snprintf(why, sizeof why, "%s", ax_error_msg());
        ax_error_clear();
        return ax_errorf(AX_ERR_ARG, "--canary-format: %s", why);
    }
    return ax_study_parse_mitigations(c->mitigations, r->mit, &r->n);
}
