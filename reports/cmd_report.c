/* `axmem report`: table-driven flags -> ax_report_build. Usage errors exit 2, runtime failures
 * 1, each with one line on stderr. */
#include "cli/commands.h"
#include "lib/core/config.h"
#include "lib/core/status.h"
#include "reports/report.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    ax_cfg_strlist run, scan;
    char index[AX_CFG_STR_MAX], out[AX_CFG_STR_MAX], title[AX_CFG_STR_MAX];
    int64_t text_chars;
    int redact, show_text;
} report_flags;

#define F(field) offsetof(report_flags, field)
static const ax_cfg_entry entries[] = {
    {"run", AX_CFG_STRLIST, F(run), "", 1, 0,
     "LABEL=DIR: a run directory (repeatable); reads whichever of DIR/probe.json (memscan "
     "probe), DIR/regurgitation.json (memscan generate), DIR/mia.json, DIR/exposure.json, "
     "DIR/scan.json (older axmem, either kind), DIR/{probe,mia,exposure}.curve.json (memscan "
     "--all-steps), DIR/metrics.jsonl (with train --scan-every records) exist (at least one scan, "
     "curve or scan record), and the samples file each scan records (checked against its size "
     "and XXH3)"},
    {"scan", AX_CFG_STRLIST, F(scan), "", 1, 0,
     "LABEL=FILE: one scan file of any kind, or a curve file of memscan --all-steps "
     "(repeatable; scans of different kinds with the same LABEL form one run)"},
    AX_CFG_INDEX_ENTRY(
        F, "INDEX.json sidecar of `memscan index`: adds the training set's duplication histogram"),
    AX_CFG_OUT_ENTRY(F, "", "output directory, created if missing (required)"),
    {"title", AX_CFG_STR, F(title), "", 1, 0,
     "page title (default: \"axmem memorization report: A vs B\")"},
    {"text-chars", AX_CFG_INT, F(text_chars), "80", 0, 100000,
     "characters of decoded sample text shown in HTML and Markdown with --show-text (report.json "
     "keeps the full text); 0 removes text from every output, like --redact"},
    {"show-text", AX_CFG_BOOL, F(show_text), "false", 0, 0,
     "quote memorized training text and canary secrets in HTML and Markdown (and the secrets in "
     "report.json); without it they show neither, and no output holds a secret"},
    {"redact", AX_CFG_BOOL, F(redact), "false", 0, 0,
     "no training text in any output, report.json included (for sharing a report)"},
};
#undef F

static const ax_cfg_table table = {
    .usage = "axmem report --run LABEL=DIR [--run LABEL=DIR ...] --out OUTDIR",
    .summary =
        "Turns memscan results into a report a reviewer can sign off on: a headline that states\n"
        "the conclusion (\"goldfish stopped verbatim copying (100% -> 0% exact) but not "
        "membership\n"
        "inference (AUC 1.00 -> 1.00) compared with baseline\"), the key numbers with a column "
        "per\n"
        "run, then a section per scan with its tables and charts. Reads scan files only; never\n"
        "loads a model.\n\n"
        "The report is one document rendered three ways: OUTDIR/report.html (one self-contained\n"
        "page, inline CSS and SVG, no scripts or external resources, laid out for any width),\n"
        "OUTDIR/report.md (its text and tables) and OUTDIR/report.json (schema axmem-report\n"
        "version 2: the sections' blocks, tables as rows keyed by column, charts with their\n"
        "data), each to a temporary file renamed into place, mode 0600.\n\n"
        "Sections: summary; extraction (exact match with 95% CI per run, by duplication bucket\n"
        "when probed with --index, matched-prefix histogram, most memorized samples); the\n"
        "goldfish audit (where greedy output first diverges against the positions goldfish\n"
        "dropped); regurgitation (longest verbatim spans of free generations); membership\n"
        "inference (AUC per score with the model-free baselines, TPR at 0.1% and 1% FPR, ROC\n"
        "curves on log-log axes); canary exposure (by repeat count, against log2 |R|);\n"
        "memorization over training (memscan --all-steps curves, train --scan-every records;\n"
        "rises above the previous upper bound flagged); training loss; each run's checkpoint\n"
        "and data; the training set's duplication (--index). Memorized text and canary secrets\n"
        "appear in HTML and Markdown only with --show-text (secrets then in report.json too).\n"
        "Scan files must be schema \"axmem-scan\" version 1; values outside their domain\n"
        "(rates outside [0, 1], counts above their totals, intervals that miss the estimate)\n"
        "are refused, naming the file and field.\n\n"
        "example (after `axmem demo --out runs/demo`):\n"
        "  axmem report --run baseline=runs/demo/baseline --run goldfish=runs/demo/goldfish \\\n"
        "               --index runs/demo/train.index.json --out runs/demo/report",
    .entries = entries,
    .n = (int)(sizeof entries / sizeof entries[0]),
};

/* "LABEL=PATH" -> input; label copied into labels[k], path points into the flag's value */
static ax_status add_inputs(const char *flag, const ax_cfg_strlist *vals, int is_file,
                            ax_report_opts *o, ax_report_input *inputs, char **labels) {
    for (int k = 0; k < vals->n; k++) {
        const char *val = vals->v[k], *eq = strchr(val, '=');
        if (!eq || eq == val || !eq[1])
            return ax_errorf(AX_ERR_ARG, "--%s needs LABEL=%s, got '%s'", flag,
                             is_file ? "FILE" : "DIR", val);
        char *label = strndup(val, (size_t)(eq - val));
        if (!label) return ax_errorf(AX_ERR_NOMEM, "out of memory");
        labels[o->n_inputs] = label;
        inputs[o->n_inputs++] = (ax_report_input){label, eq + 1, is_file};
    }
    return AX_OK;
}

static ax_status run(report_flags *fl, int *help) {
    int n = fl->run.n + fl->scan.n;
    if (*help) return AX_OK;
    if (!n) return ax_errorf(AX_ERR_ARG, "give at least one --run LABEL=DIR or --scan LABEL=FILE");
    if (!fl->out[0]) return ax_errorf(AX_ERR_ARG, "--out OUTDIR is required");
    ax_report_input *inputs = calloc((size_t)n, sizeof *inputs);
    char **labels = calloc((size_t)n, sizeof *labels);
    ax_report_opts o = {.inputs = inputs,
                        .index = fl->index[0] ? fl->index : NULL,
                        .out = fl->out,
                        .title = fl->title[0] ? fl->title : NULL,
                        .text_chars = (int)fl->text_chars,
                        .redact = fl->redact,
                        .show_text = fl->show_text};
    ax_status st = inputs && labels ? AX_OK : ax_errorf(AX_ERR_NOMEM, "out of memory");
    if (st == AX_OK) st = add_inputs("run", &fl->run, 0, &o, inputs, labels);
    if (st == AX_OK) st = add_inputs("scan", &fl->scan, 1, &o, inputs, labels);
    if (st == AX_OK) st = ax_report_build(&o);
    if (st == AX_OK) printf("wrote %s/report.html, report.md, report.json\n", o.out);
    for (int i = 0; labels && i < n; i++) free(labels[i]);
    free(labels), free(inputs);
    return st;
}

int ax_cmd_report(int argc, char **argv) {
    report_flags fl;
    int help = 0;
    ax_error_clear();
    ax_status st = ax_cfg_set_defaults(&table, &fl);
    if (st == AX_OK) st = ax_cfg_parse_argv(&table, &fl, argc, argv, NULL, &help);
    if (st == AX_OK && help) ax_cfg_print_help(&table, stdout);
    if (st == AX_OK) st = run(&fl, &help);
    ax_cfg_free(&table, &fl);
    if (st == AX_OK) return 0;
    const char *m = ax_error_msg();
    fprintf(stderr, "axmem report: %s\n", m[0] ? m : ax_status_str(st));
    return st == AX_ERR_ARG ? 2 : 1;
}
