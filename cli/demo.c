/* `axmem demo`: the main job end to end on the bundled corpus, through the library calls the
 * commands make (data/data_run.h, data/split.h, data/canary.h, index/index.h, train/train_run.h,
 * memscan/probe_run.h, generate_run.h, mia_run.h, exposure_run.h, reports/report.h): train a
 * tokenizer, split a pool of documents at random into a "memorization set" (the goldfish paper's
 * extreme setting: a few dozen documents seen for many epochs) and held-out non-members, plant
 * canaries in the memorization set, train a baseline and a goldfish model on it, index it, probe
 * both models for extractable memorization, attack them (membership inference, canary
 * exposure), and write a summary a person can read. */
#include "cli/commands.h"
#include "data/axd.h"
#include "data/canary.h"
#include "data/data_run.h"
#include "data/split.h"
#include "lib/core/cliargs.h"
#include "lib/core/config.h"
#include "lib/core/fsutil.h"
#include "lib/core/json.h"
#include "lib/core/log.h"
#include "lib/core/stop.h"
#include "memscan/exposure_run.h"
#include "memscan/generate_run.h"
#include "index/index.h"
#include "memscan/mia_run.h"
#include "memscan/probe_run.h"
#include "reports/report.h"
#include "train/train_run.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEMO_MAX_REPEATS 16
/* The split's overlap rule: 32 tokens, not data split's default 13, which on the formulaic KJV
 * drops most held-out chapters (docs/privacy.md, "Member / held-out split"). */
#define DEMO_NGRAM 32
/* Training's sequence length (--packing doc): the canaries are planted within it */
#define DEMO_SEQ_LEN 160

typedef struct {
    char out[AX_CFG_STR_MAX], corpus[AX_CFG_STR_MAX];
    char canary_format[AX_CFG_STR_MAX], canary_repeats[AX_CFG_STR_MAX];
    int64_t steps_n, vocab_n, docs_n, per_repeat;
    int privacy;   /* --no-privacy: no canaries, no mia / exposure scans */
    int show_text; /* the report quotes memorized text and secrets (`axmem report --show-text`) */
    int repeats[DEMO_MAX_REPEATS], n_repeats;
} demo_args;

#define F(field) offsetof(demo_args, field)
static const ax_cfg_entry entries[] = {
    AX_CFG_OUT_ENTRY(F, "runs/demo", "output folder"),
    {"corpus", AX_CFG_STR, F(corpus), "data/corpus/kjv.jsonl", 1, 0,
     "JSONL corpus (one document per line, \"text\" field)"},
    {"steps", AX_CFG_INT, F(steps_n), "300", 1, 1e7, "training steps per model"},
    {"docs", AX_CFG_INT, F(docs_n), "32", 1, 500,
     "documents in the memorization set (and as many drawn as held-out)"},
    {"vocab-size", AX_CFG_INT, F(vocab_n), "2048", 257, 1 << 22, "tokenizer vocabulary"},
    {"privacy", AX_CFG_BOOL, F(privacy), "true", 0, 0,
     "canaries, membership inference and exposure (--no-privacy skips them)"},
    {"canary-format", AX_CFG_STR, F(canary_format), "my PIN is {d3}", 1, 0,
     "canary text, as `axmem data canaries --format` (a small space: exact exposure)"},
    {"canary-repeats", AX_CFG_STR, F(canary_repeats), "1,4,16", 1, 0,
     "comma-separated repeat counts of the canaries (up to 16 counts)"},
    {"canaries-per-repeat", AX_CFG_INT, F(per_repeat), "2", 1, 100, "canaries per repeat count"},
    {"show-text", AX_CFG_BOOL, F(show_text), "false", 0, 0,
     "the report's HTML and Markdown quote memorized text and canary secrets"},
};
#undef F

static const ax_cfg_table table = {
    .usage = "axmem demo [flags]",
    .summary =
        "The main job on the bundled public-domain corpus (KJV, one document per chapter):\n"
        "  1. trains a byte-level BPE tokenizer on the whole corpus;\n"
        "  2. encodes 2N chapters (first 500 characters each) and splits them at random into\n"
        "     N members (the memorization set) and N held-out non-members, dropping held-out\n"
        "     chapters that share a run of >= 32 tokens with the members (data split);\n"
        "  3. plants canaries (--canary-format, --canaries-per-repeat of them at each of\n"
        "     --canary-repeats) between sentences of random members, within the 160 tokens\n"
        "     training reads of a document (data canaries --within 160; secrets in\n"
        "     DIR/secrets.json, mode 0600);\n"
        "  4. trains a baseline and a goldfish (hash:k=4,h=13) model for many epochs on the\n"
        "     members (one document per sequence), validating on the held-out set;\n"
        "  5. indexes the training set (memscan index) and probes both models: 32-token\n"
        "     prefix -> greedy 32-token suffix, exact match (memscan probe), and free\n"
        "     generations slid over the index for verbatim spans (memscan generate);\n"
        "  6. attacks both: membership inference, members vs held-out (memscan mia: loss,\n"
        "     zlib, min-k%, min-k%++; ROC AUC with a bootstrap interval; beside them the\n"
        "     model-free baselines, zlib bits per byte and length, which read no model), and\n"
        "     canary exposure by repeat count, exact over the format's space (memscan exposure);\n"
        "  7. writes DIR/summary.md and the report DIR/report/report.{html,md,json}: the\n"
        "     scans' numbers and charts, membership ROC curves, exposure by repeat count (no\n"
        "     memorized text and no secret in the report without --show-text, none ever in\n"
        "     the summary).\n"
        "--no-privacy skips steps 3 and 6 (the held-out set still validates).",
    .entries = entries,
    .n = (int)(sizeof entries / sizeof entries[0]),
};

/* "1,4,16" -> the counts; nonzero when it is not such a list */
static int parse_repeats(const char *s, int *out, int *n) {
    *n = 0;
    for (const char *p = s;;) {
        size_t len = strcspn(p, ",");
        char one[32];
        int64_t v = 0;
        snprintf(one, sizeof one, "%.*s", (int)(len < 31 ? len : 31), p);
        if (len == 0 || len > 30 || ax_parse_i64(one, &v) != 1 || v < 1 || v > 100000 ||
            *n == DEMO_MAX_REPEATS)
            return 1;
        out[(*n)++] = (int)v;
        if (!p[len]) return 0;
        p += len + 1;
    }
}

/* 0: go on; otherwise the exit code (help printed or bad flags) */
static int parse(int argc, char **argv, demo_args *a) {
    int help = 0;
    ax_status st = ax_cfg_set_defaults(&table, a);
    if (st == AX_OK) st = ax_cfg_parse_argv(&table, a, argc, argv, NULL, &help);
    if (st != AX_OK) {
        fprintf(stderr, "axmem demo: %s\n", ax_error_msg());
        return 2;
    }
    if (help) {
        ax_cfg_print_help(&table, stdout);
        return -1;
    }
    if (a->privacy && parse_repeats(a->canary_repeats, a->repeats, &a->n_repeats)) {
        fprintf(stderr,
                "axmem demo: --canary-repeats '%s' is not a list of 1 to %d counts in 1..100000, "
                "e.g. 1,4,16\n",
                a->canary_repeats, DEMO_MAX_REPEATS);
        return 2;
    }
    ax_canary_format fmt; /* checked before any work, not after the tokenizer */
    if (a->privacy && ax_canary_format_parse(a->canary_format, &fmt) != AX_OK) {
        fprintf(stderr, "axmem demo: --canary-format: %s\n", ax_error_msg());
        return 2;
    }
    return 0;
}

/* Writes documents [first, first+n) of the JSONL corpus, each cut to `chars` bytes, to path. */
static ax_status subset(const char *corpus, long first, long n, size_t chars, const char *path) {
    FILE *in = fopen(corpus, "r"), *out = NULL;
    if (!in) return ax_errorf(AX_ERR_IO, "--corpus %s cannot be read", corpus);
    out = ax_fopen_private(path); /* training text: 0600 */
    char *line = NULL;
    size_t cap = 0;
    long i = 0, written = 0;
    ax_status st = out ? AX_OK : ax_errorf(AX_ERR_IO, "cannot write %s", path);
    while (st == AX_OK && written < n && getline(&line, &cap, in) > 0) {
        if (i++ < first) continue;
        ax_json *j = NULL;
        const char *text;
        st = ax_json_parse(line, strlen(line), corpus, &j);
        if (st == AX_OK) st = ax_json_get_str(j, "text", corpus, &text);
        if (st == AX_OK) {
            ax_jw w;
            ax_jw_init(&w);
            ax_jw_obj_begin(&w);
            ax_jw_key(&w, "text");
            size_t len = strlen(text) < chars ? strlen(text) : chars;
            while (len > 0 && len < strlen(text) && ((unsigned char)text[len] & 0xC0) == 0x80)
                len--; /* never cut inside a UTF-8 character */
            ax_jw_strn(&w, text, len);
            ax_jw_obj_end(&w);
            if (!ax_jw_text(&w) || fprintf(out, "%s\n", ax_jw_text(&w)) < 0)
                st = ax_errorf(AX_ERR_IO, "cannot write %s", path);
            ax_jw_free(&w);
            written++;
        }
        ax_json_free(j);
    }
    if (st == AX_OK && written < n)
        st = ax_errorf(AX_ERR_ARG, "--corpus %s has fewer than %ld documents", corpus, first + n);
    free(line);
    fclose(in);
    if (out && fclose(out) && st == AX_OK) st = ax_errorf(AX_ERR_IO, "cannot write %s", path);
    return st;
}

/* What the demo ran: a paragraph of the summary, whose numbers the report reads from the
 * scans. */
static void intro(const demo_args *a, const ax_split_result *sp, char *t, size_t n) {
    size_t k = (size_t)snprintf(
        t, n,
        "What ran: %" PRIu64 " documents of %s (first 500 characters each)%s, %lld steps of 16 "
        "sequences (one document per sequence, many epochs), tiny model; probe: 32-token prefix "
        "from each training document, greedy 32-token continuation; regurgitation: 32 free "
        "generations of 96 tokens (temperature 0.7) slid over a 16-token index of the training "
        "set.",
        sp->train_docs, a->corpus, a->privacy ? " with canaries" : "", (long long)a->steps_n);
    if (a->privacy && k < n)
        k += (size_t)snprintf(t + k, n - k,
                              " Membership inference: members are the %" PRIu64
                              " training documents, non-members %" PRIu64
                              " held out of the same pool at random (%" PRIu64
                              " more dropped for sharing a run of >= %d tokens with the members). "
                              "Canaries: '%s' planted at repeat counts %s; secrets only in "
                              "secrets.json and exposure.samples.jsonl (mode 0600). Membership "
                              "is scored on the members as drawn, without their canaries.",
                              sp->train_docs, sp->holdout_docs, sp->dropped_docs, DEMO_NGRAM,
                              a->canary_format, a->canary_repeats);
    if (k < n)
        snprintf(t + k, n - k,
                 " Details: report/report.html; the scans in baseline/ and goldfish/.");
}

/* A step done through a library call: its failure is one line naming the step. */
static int step(const char *what, ax_status st) {
    if (st == AX_OK) return 0;
    const char *m = ax_error_msg();
    fprintf(stderr, "axmem demo: step '%s' failed: %s\n", what, m[0] ? m : ax_status_str(st));
    return st == AX_ERR_ARG ? 2 : 1;
}

static ax_status demo_tokenizer(const demo_args *a, const char *tok) {
    AX_INFO("demo: train the tokenizer");
    ax_error_clear();
    const char *inputs[1] = {a->corpus};
    ax_data_tokenizer_result r;
    AX_CHECK(ax_data_tokenizer_train(inputs, 1, 0, (uint64_t)a->vocab_n, 0, tok, &r));
    AX_INFO("wrote %s: vocab %d, %d merges, checksum %016" PRIx64 ", %.2f s", tok, r.vocab,
            r.merges, r.checksum, r.seconds);
    return AX_OK;
}

static ax_status demo_encode(const char *tok, const char *jsonl, const char *axd) {
    AX_INFO("demo: encode %s", jsonl);
    ax_error_clear();
    const char *inputs[1] = {jsonl};
    ax_data_encode_result r;
    AX_CHECK(ax_data_encode(tok, inputs, 1, 0, 0, axd, &r));
    AX_INFO("wrote %s", axd);
    return AX_OK;
}

/* `axmem memscan index --n 16`: windows of 16 tokens, the command's other defaults */
static ax_status demo_index(const char *axd, const char *index) {
    AX_INFO("demo: index the training set");
    ax_error_clear();
    ax_memscan_build_opts o;
    ax_memscan_build_opts_default(&o);
    o.n = 16;
    ax_stop_catch();
    o.stop = ax_stop_flag();
    o.progress = 1;
    ax_axd_t *ds = NULL;
    ax_memscan_index_t *idx = NULL;
    ax_status st = ax_axd_open(axd, 1, &ds);
    if (st == AX_OK) st = ax_memscan_index_build(ds, &o, &idx);
    if (st == AX_OK) st = ax_memscan_index_save(idx, index, o.stop);
    if (st == AX_OK) AX_INFO("wrote %s and %s.json", index, index);
    ax_memscan_index_free(idx);
    ax_axd_free(ds);
    return st;
}

/* the demo's training run: `axmem train`'s defaults and the settings below */
static ax_status demo_train(const demo_args *a, const char *data, const char *val, const char *tok,
                            const char *out, const char *goldfish) {
    AX_INFO("demo: train %s", out);
    ax_error_clear();
    ax_train_config c;
    AX_CHECK(ax_cfg_set_defaults(&ax_train_table, &c));
    /* strings through the table: a path too long for the field is an error naming it */
    const char *text[][2] = {{"data", data},        {"val-data", val}, {"tokenizer", tok},
                             {"out", out},          {"model", "tiny"}, {"packing", "doc"},
                             {"goldfish", goldfish}};
    for (size_t i = 0; i < sizeof text / sizeof text[0]; i++)
        AX_CHECK(ax_cfg_set(&ax_train_table, &c, text[i][0], text[i][1], NULL));
    c.seq_len = DEMO_SEQ_LEN;
    c.batch = 16;
    c.steps = a->steps_n;
    c.lr = 3e-3;
    c.warmup = a->steps_n < 20 ? a->steps_n : 20; /* a short demo (--steps 5) runs too */
    c.weight_decay = 0;
    c.val_batches = 2;
    c.log_every = 50;
    ax_train_result r;
    AX_CHECK(ax_train_run(&c, NULL, &r));
    if (r.interrupted)
        return ax_errorf(AX_ERR_INTERRUPTED, "training %s stopped at step %ld", out, r.last_step);
    AX_INFO("done: step %ld, loss %.4f; metrics in %s/metrics.jsonl", r.last_step, r.final_loss,
            out);
    return AX_OK;
}

/* `axmem memscan probe`'s defaults and: a 32-token prefix of every training document, a
 * 32-token greedy continuation */
static ax_status demo_probe(const demo_args *a, const char *run, const char *data,
                            const char *tok) {
    AX_INFO("demo: probe %s", run);
    ax_error_clear();
    ax_ms_probe_opts o;
    AX_CHECK(ax_cfg_set_defaults(&ax_ms_probe_table, &o));
    char out[1100];
    snprintf(out, sizeof out, "%s/probe.json", run); /* samples: probe.samples.jsonl */
    const char *text[][2] = {{"ckpt", run}, {"data", data}, {"tokenizer", tok}, {"out", out}};
    for (size_t i = 0; i < sizeof text / sizeof text[0]; i++)
        AX_CHECK(ax_cfg_set(&ax_ms_probe_table, &o, text[i][0], text[i][1], NULL));
    o.samples = a->docs_n;
    o.prefix = 32;
    o.suffix = 32;
    ax_ms_probe_summary sum;
    AX_CHECK(ax_ms_probe_run(&o, &sum));
    ax_ms_probe_print(&o, &sum, stdout); /* the line `axmem memscan probe` prints */
    return AX_OK;
}

/* `axmem memscan generate`'s defaults and: 32 generations of 96 tokens at temperature 0.7 */
static ax_status demo_generate(const char *run, const char *index, const char *tok) {
    AX_INFO("demo: regurgitation scan of %s", run);
    ax_error_clear();
    ax_ms_generate_opts o;
    AX_CHECK(ax_cfg_set_defaults(&ax_ms_generate_table, &o));
    char out[1100];
    snprintf(out, sizeof out, "%s/regurgitation.json", run); /* + regurgitation.samples.jsonl */
    const char *text[][2] = {{"ckpt", run}, {"index", index}, {"tokenizer", tok}, {"out", out}};
    for (size_t i = 0; i < sizeof text / sizeof text[0]; i++)
        AX_CHECK(ax_cfg_set(&ax_ms_generate_table, &o, text[i][0], text[i][1], NULL));
    o.samples = 32;
    o.length = 96;
    o.temperature = 0.7;
    ax_ms_generate_summary sum;
    AX_CHECK(ax_ms_generate_run(&o, &sum));
    ax_ms_generate_print(&sum, stdout);
    return AX_OK;
}

/* `axmem data split --holdout 0.5 --seed 1 --ngram 32`: the pool -> members + non-members */
static ax_status demo_split(const char *pool, const char *members, const char *heldout,
                            ax_split_result *r) {
    AX_INFO("demo: split the pool into members and held-out non-members");
    ax_error_clear();
    const ax_split_config c = {.holdout = 0.5, .seed = 1, .ngram = DEMO_NGRAM, .max_memory = 0};
    AX_CHECK(ax_data_split(pool, members, heldout, &c, r));
    AX_INFO("wrote %s (%" PRIu64 " documents) and %s (%" PRIu64 " documents; %" PRIu64
            " dropped: they share a run of >= %d tokens with the members)",
            members, r->train_docs, heldout, r->holdout_docs, r->dropped_docs, DEMO_NGRAM);
    return AX_OK;
}

/* `axmem data canaries` with the demo's flags and every other string of the space as reference
 * (exact exposure), every copy within the tokens training reads of a document; where the
 * members have no room for that (a few short runs' documents), anywhere, and memscan exposure
 * marks the copies training never read */
static ax_status demo_canaries(const demo_args *a, const char *members, const char *tok,
                               const char *out, const char *secrets) {
    AX_INFO("demo: plant canaries");
    ax_error_clear();
    ax_canary_config c = {.input = members,
                          .tokenizer = tok,
                          .format = a->canary_format,
                          .out = out,
                          .secrets = secrets,
                          .repeats = a->repeats,
                          .n_repeats = a->n_repeats,
                          .per_repeat = (int)a->per_repeat,
                          .references = 1000, /* the whole rest of a small space: exact exposure */
                          .seed = 1,
                          .within = DEMO_SEQ_LEN}; /* where --packing doc trains */
    ax_canary_result r;
    if (ax_data_canaries(&c, &r) == AX_ERR_ARG) {
        AX_WARN("demo: %s; planting anywhere in the members instead (memscan exposure marks the "
                "copies training never reads)",
                ax_error_msg());
        ax_error_clear();
        c.within = 0;
        AX_CHECK(ax_data_canaries(&c, &r));
    }
    AX_INFO("wrote %s: %ld canaries, %" PRIu64 " insertions; %s (mode 0600): %ld references%s", out,
            r.canaries, r.insertions, secrets, r.references,
            r.references_complete ? " (all the rest of the space)" : "");
    return AX_OK;
}

/* `axmem memscan mia`'s defaults: the first 128 tokens of every member and non-member, zlib
 * through the tokenizer, no reference model; writes RUN/mia.json + mia.samples.jsonl */
static ax_status demo_mia(const char *run, const char *members, const char *nonmembers,
                          const char *tok) {
    AX_INFO("demo: membership inference on %s", run);
    ax_error_clear();
    ax_ms_mia_opts o;
    AX_CHECK(ax_cfg_set_defaults(&ax_ms_mia_table, &o));
    const char *text[][2] = {{"ckpt", run},
                             {"members", members},
                             {"nonmembers", nonmembers},
                             {"tokenizer", tok},
                             {"out", run}};
    for (size_t i = 0; i < sizeof text / sizeof text[0]; i++)
        AX_CHECK(ax_cfg_set(&ax_ms_mia_table, &o, text[i][0], text[i][1], NULL));
    ax_ms_mia_summary sum;
    AX_CHECK(ax_ms_mia_run(&o, &sum));
    ax_ms_mia_print(&o, &sum, stdout);
    return AX_OK;
}

/* `axmem memscan exposure`'s defaults: exact ranks when the space has <= 100000 strings;
 * writes RUN/exposure.json + exposure.samples.jsonl (0600) */
static ax_status demo_exposure(const char *run, const char *secrets, const char *tok) {
    AX_INFO("demo: canary exposure of %s", run);
    ax_error_clear();
    ax_ms_exposure_opts o;
    AX_CHECK(ax_cfg_set_defaults(&ax_ms_exposure_table, &o));
    const char *text[][2] = {
        {"ckpt", run}, {"canaries", secrets}, {"tokenizer", tok}, {"out", run}};
    for (size_t i = 0; i < sizeof text / sizeof text[0]; i++)
        AX_CHECK(ax_cfg_set(&ax_ms_exposure_table, &o, text[i][0], text[i][1], NULL));
    ax_ms_exposure_summary sum;
    AX_CHECK(ax_ms_exposure_run(&o, &sum));
    ax_ms_exposure_print(&sum, stdout);
    return AX_OK;
}

int ax_cmd_demo(int argc, char **argv) {
    ax_error_clear();
    demo_args a;
    int rc = parse(argc, argv, &a);
    if (rc) return rc < 0 ? 0 : rc;
    char tok[1024], pool[1024], pool_axd[1024], members[1024], held_axd[1024], train[1024];
    char secrets[1024], index[1024], base[1024], gold[1024];
    snprintf(tok, sizeof tok, "%s/tokenizer.axt", a.out);
    snprintf(pool, sizeof pool, "%s/pool.jsonl", a.out);
    snprintf(pool_axd, sizeof pool_axd, "%s/pool.axd", a.out);
    snprintf(members, sizeof members, "%s/members.axd", a.out);
    snprintf(held_axd, sizeof held_axd, "%s/heldout.axd", a.out);
    snprintf(train, sizeof train, "%s/%s", a.out, a.privacy ? "train.axd" : "members.axd");
    snprintf(secrets, sizeof secrets, "%s/secrets.json", a.out);
    snprintf(index, sizeof index, "%s/train.index", a.out);
    snprintf(base, sizeof base, "%s/baseline", a.out);
    snprintf(gold, sizeof gold, "%s/goldfish", a.out);
    long docs = (long)a.docs_n;
    if (ax_mkdir_p(a.out) != AX_OK || subset(a.corpus, 100, 2 * docs, 500, pool) != AX_OK) {
        fprintf(stderr, "axmem demo: %s\n", ax_error_msg());
        return 1;
    }
    ax_split_result sp;
    if ((rc = step("train the tokenizer", demo_tokenizer(&a, tok))) ||
        (rc = step("encode the pool", demo_encode(tok, pool, pool_axd))) ||
        (rc = step("split members / held-out", demo_split(pool_axd, members, held_axd, &sp))) ||
        (a.privacy &&
         (rc = step("plant canaries", demo_canaries(&a, members, tok, train, secrets)))) ||
        (rc = step("index the training set", demo_index(train, index))))
        return rc;
    const char *runs[2] = {base, gold}, *specs[2] = {"none", "hash:k=4,h=13"};
    for (int i = 0; i < 2; i++) {
        if (ax_path_exists(runs[i])) ax_rm_rf(runs[i]); /* the demo always starts fresh */
        const char *what[5][2] = {
            {"train the baseline model", "train the goldfish model"},
            {"probe the baseline model", "probe the goldfish model"},
            {"regurgitation scan (baseline)", "regurgitation scan (goldfish)"},
            {"membership inference (baseline)", "membership inference (goldfish)"},
            {"canary exposure (baseline)", "canary exposure (goldfish)"}};
        if ((rc = step(what[0][i], demo_train(&a, train, held_axd, tok, runs[i], specs[i]))) ||
            (rc = step(what[1][i], demo_probe(&a, runs[i], train, tok))) ||
            (rc = step(what[2][i], demo_generate(runs[i], index, tok))))
            return rc;
        /* members: the split's documents, before the canaries went in (the model trained on
         * them with a canary segment between two sentences): scored as drawn from the pool,
         * like the non-members, so length and compressibility do not tell the sets apart */
        if (a.privacy && ((rc = step(what[3][i], demo_mia(runs[i], members, held_axd, tok))) ||
                          (rc = step(what[4][i], demo_exposure(runs[i], secrets, tok)))))
            return rc;
    }
    char idx_json[1100], report_dir[1100], summary[1100], what_ran[8192];
    snprintf(idx_json, sizeof idx_json, "%s.json", index);
    snprintf(report_dir, sizeof report_dir, "%s/report", a.out);
    snprintf(summary, sizeof summary, "%s/summary.md", a.out);
    intro(&a, &sp, what_ran, sizeof what_ran);
    const ax_report_input inputs[2] = {{"baseline", base, 0}, {"goldfish", gold, 0}};
    const ax_report_opts ro = {.inputs = inputs,
                               .n_inputs = 2,
                               .index = idx_json,
                               .out = report_dir,
                               /* no training text in any output, report.json included,
                                * unless --show-text: the probes' text holds the canaries */
                               .text_chars = a.show_text ? 80 : 0,
                               .show_text = a.show_text,
                               .title = "axmem demo: goldfish loss against verbatim memorization",
                               .intro = what_ran,
                               /* the report's summary section, never any text (0600 anyway) */
                               .summary = summary};
    AX_INFO("demo: write the report");
    ax_error_clear();
    if ((rc = step("write the report", ax_report_build(&ro)))) return rc;
    char *text = NULL;
    size_t len = 0;
    if (ax_read_file(summary, &text, &len) == AX_OK) fwrite(text, 1, len, stdout);
    free(text);
    printf("wrote %s, %s/report.html, report.md, report.json\n", summary, report_dir);
    AX_INFO("demo: report in %s/report.html (and report.md, report.json)", report_dir);
    return 0;
}
