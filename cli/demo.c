/* `axmem demo`: the main job end to end on the bundled corpus, through the library calls the
 * commands make (data/encode.h, memscan/index.h, train/train.h, memscan/probe_run.h,
 * memscan/generate_run.h, reports/report.h): train a tokenizer, build a "memorization set"
 * (the goldfish paper's extreme setting: a few dozen documents seen for many epochs) and a held-out
 * set, train a baseline and a goldfish model, index the training set, probe both models for
 * extractable memorization, and write a summary a person can read. */
#include "cli/commands.h"
#include "data/axd.h"
#include "data/encode.h"
#include "lib/core/config.h"
#include "lib/core/fsutil.h"
#include "lib/core/json.h"
#include "lib/core/log.h"
#include "lib/core/stop.h"
#include "memscan/generate_run.h"
#include "memscan/index.h"
#include "memscan/probe_run.h"
#include "reports/report.h"
#include "train/train.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char out[AX_CFG_STR_MAX], corpus[AX_CFG_STR_MAX];
    int64_t steps_n, vocab_n, docs_n;
    char steps[32], docs[32]; /* the numbers as text, for the summary */
} demo_args;

/* What the summary reports of one model: its scans' numbers and its final held-out loss. */
typedef struct {
    ax_ms_probe_summary probe;
    ax_ms_generate_summary gen;
    double val_loss; /* -1: none logged */
} demo_scores;

#define F(field) offsetof(demo_args, field)
static const ax_cfg_entry entries[] = {
    AX_CFG_OUT_ENTRY(F, "runs/demo", "output folder"),
    {"corpus", AX_CFG_STR, F(corpus), "data/corpus/kjv.jsonl", 1, 0,
     "JSONL corpus (one document per line, \"text\" field)"},
    {"steps", AX_CFG_INT, F(steps_n), "300", 1, 1e7, "training steps per model"},
    {"docs", AX_CFG_INT, F(docs_n), "32", 1, 500, "documents in the memorization set"},
    {"vocab-size", AX_CFG_INT, F(vocab_n), "2048", 257, 1 << 22, "tokenizer vocabulary"},
};
#undef F

static const ax_cfg_table table = {
    .usage = "axmem demo [flags]",
    .summary =
        "The main job on the bundled public-domain corpus (KJV, one document per chapter):\n"
        "  1. trains a byte-level BPE tokenizer on the whole corpus;\n"
        "  2. takes N chapters (first 500 characters each) as a memorization set and N\n"
        "     others as held-out text, and encodes both;\n"
        "  3. trains a baseline and a goldfish (hash:k=4,h=13) model for many epochs on the\n"
        "     memorization set (one document per sequence), validating on held-out text;\n"
        "  4. indexes the training set (memscan index) and probes both models: 32-token\n"
        "     prefix -> greedy 32-token suffix, exact match (memscan probe), and free\n"
        "     generations slid over the index for verbatim spans (memscan generate);\n"
        "  5. writes DIR/summary.md and the report DIR/report/report.{html,md,json}.",
    .entries = entries,
    .n = (int)(sizeof entries / sizeof entries[0]),
};

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
    snprintf(a->steps, sizeof a->steps, "%lld", (long long)a->steps_n);
    snprintf(a->docs, sizeof a->docs, "%lld", (long long)a->docs_n);
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

/* The final validation loss of a run: its metrics.jsonl's last line, read with the JSON parser;
 * -1 when there is none (the summary shows it, it is not a failure). */
static double read_val_loss(const char *run) {
    char path[1100], line[1 << 14], last[1 << 14] = "";
    snprintf(path, sizeof path, "%s/metrics.jsonl", run);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f)) memcpy(last, line, sizeof line);
    if (f) fclose(f);
    double v = -1;
    ax_json *j = NULL;
    if (last[0] && ax_json_parse(last, strlen(last), path, &j) == AX_OK) {
        const ax_json *vl = ax_json_get(j, "val_loss");
        if (vl && vl->type == AX_JSON_NUM) v = vl->num;
        ax_json_free(j);
    }
    ax_error_clear();
    return v;
}

static int summarize(const demo_args *a, const char *base, const char *gold,
                     const demo_scores sc[2]) {
    char path[1100];
    snprintf(path, sizeof path, "%s/summary.md", a->out);
    FILE *f = ax_fopen_private(path); /* 0600, like every file that may quote training text */
    if (!f) {
        fprintf(stderr, "axmem demo: %s\n", ax_error_msg());
        return 1;
    }
    static const char *names[2] = {"baseline", "goldfish hash:k=4,h=13"};
    for (int pass = 0; pass < 2; pass++) {
        FILE *o = pass ? stdout : f;
        fprintf(o,
                "# axmem demo: goldfish loss against verbatim memorization\n\n"
                "%s documents of %s (first 500 characters each), %s steps of 16 sequences "
                "(one document per sequence, many epochs), tiny model.\n"
                "Probe: 32-token prefix from each training document, greedy 32-token "
                "continuation.\n\n"
                "Regurgitation: 32 free generations of 96 tokens (temperature 0.7) slid over a "
                "16-token index of the training set; the longest verbatim span in each.\n\n"
                "| model | exact match (95%% CI) | token accuracy | longest verbatim span (mean) "
                "| held-out loss |\n"
                "|---|---|---|---|---|\n",
                a->docs, a->corpus, a->steps);
        for (int i = 0; i < 2; i++) {
            const ax_ms_ci *em = &sc[i].probe.exact_match;
            fprintf(o, "| %s | %.0f%% (%.0f-%.0f%%) | %.3f | %.1f tokens | %.3f |\n%s", names[i],
                    100 * em->mean, 100 * em->lo, 100 * em->hi, sc[i].probe.token_accuracy.mean,
                    sc[i].gen.mean_longest_span, sc[i].val_loss, i ? "\n" : "");
        }
        fprintf(o,
                "Details: probe.json (probe) and regurgitation.json (free generations) in %s and "
                "%s; per sample in probe.samples.jsonl and regurgitation.samples.jsonl; training "
                "in metrics.jsonl.\n",
                base, gold);
    }
    fclose(f);
    return 0;
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
    c.seq_len = 160;
    c.batch = 16;
    c.steps = a->steps_n;
    c.lr = 3e-3;
    c.warmup = 20;
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
static ax_status demo_probe(const demo_args *a, const char *run, const char *data, const char *tok,
                            ax_ms_probe_summary *sum) {
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
    AX_CHECK(ax_ms_probe_run(&o, sum));
    ax_ms_probe_print(&o, sum, stdout); /* the line `axmem memscan probe` prints */
    return AX_OK;
}

/* `axmem memscan generate`'s defaults and: 32 generations of 96 tokens at temperature 0.7 */
static ax_status demo_generate(const char *run, const char *index, const char *tok,
                               ax_ms_generate_summary *sum) {
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
    AX_CHECK(ax_ms_generate_run(&o, sum));
    ax_ms_generate_print(sum, stdout);
    return AX_OK;
}

int ax_cmd_demo(int argc, char **argv) {
    ax_error_clear();
    demo_args a;
    int rc = parse(argc, argv, &a);
    if (rc) return rc < 0 ? 0 : rc;
    char tok[1024], memo[1024], heldout[1024], memo_axd[1024], held_axd[1024], index[1024];
    char base[1024], gold[1024];
    snprintf(tok, sizeof tok, "%s/tokenizer.axt", a.out);
    snprintf(memo, sizeof memo, "%s/memo.jsonl", a.out);
    snprintf(heldout, sizeof heldout, "%s/heldout.jsonl", a.out);
    snprintf(memo_axd, sizeof memo_axd, "%s/memo.axd", a.out);
    snprintf(held_axd, sizeof held_axd, "%s/heldout.axd", a.out);
    snprintf(index, sizeof index, "%s/memo.index", a.out);
    snprintf(base, sizeof base, "%s/baseline", a.out);
    snprintf(gold, sizeof gold, "%s/goldfish", a.out);
    long docs = (long)a.docs_n;
    if (ax_mkdir_p(a.out) != AX_OK || subset(a.corpus, 100, docs, 500, memo) != AX_OK ||
        subset(a.corpus, 1000, docs, 500, heldout) != AX_OK) {
        fprintf(stderr, "axmem demo: %s\n", ax_error_msg());
        return 1;
    }
    if ((rc = step("train the tokenizer", demo_tokenizer(&a, tok))) ||
        (rc = step("encode the memorization set", demo_encode(tok, memo, memo_axd))) ||
        (rc = step("encode the held-out set", demo_encode(tok, heldout, held_axd))) ||
        (rc = step("index the training set", demo_index(memo_axd, index))))
        return rc;
    const char *runs[2] = {base, gold}, *specs[2] = {"none", "hash:k=4,h=13"};
    demo_scores sc[2];
    for (int i = 0; i < 2; i++) {
        if (ax_path_exists(runs[i])) ax_rm_rf(runs[i]); /* the demo always starts fresh */
        const char *what[3][2] = {
            {"train the baseline model", "train the goldfish model"},
            {"probe the baseline model", "probe the goldfish model"},
            {"regurgitation scan (baseline)", "regurgitation scan (goldfish)"}};
        if ((rc = step(what[0][i], demo_train(&a, memo_axd, held_axd, tok, runs[i], specs[i]))) ||
            (rc = step(what[1][i], demo_probe(&a, runs[i], memo_axd, tok, &sc[i].probe))) ||
            (rc = step(what[2][i], demo_generate(runs[i], index, tok, &sc[i].gen))))
            return rc;
        sc[i].val_loss = read_val_loss(runs[i]);
    }
    if ((rc = summarize(&a, base, gold, sc))) return rc;
    char idx_json[1100], report_dir[1100];
    snprintf(idx_json, sizeof idx_json, "%s.json", index);
    snprintf(report_dir, sizeof report_dir, "%s/report", a.out);
    const ax_report_input inputs[2] = {{"baseline", base, 0}, {"goldfish", gold, 0}};
    const ax_report_opts ro = {.inputs = inputs,
                               .n_inputs = 2,
                               .index = idx_json,
                               .out = report_dir,
                               .text_chars = 80}; /* `axmem report`'s defaults */
    AX_INFO("demo: write the report");
    ax_error_clear();
    if ((rc = step("write the report", ax_report_build(&ro)))) return rc;
    printf("wrote %s/report.html, report.md, report.json\n", report_dir);
    AX_INFO("demo: report in %s/report.html (and report.md, report.json)", report_dir);
    return 0;
}
