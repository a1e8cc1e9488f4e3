/* `axmem report`: flags -> ax_report_build. Usage errors exit 2, runtime failures 1, each
 * with one line on stderr. */
#include "cli/commands.h"
#include "lib/cliargs.h"
#include "lib/status.h"
#include "reports/report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *HELP =
    "usage: axmem report --run LABEL=DIR [--run LABEL=DIR ...] --out OUTDIR [flags]\n\n"
    "Turns memscan results into a report a reviewer can sign off on: a plain-language\n"
    "headline (\"baseline: 32/32 probed documents reproduced verbatim; goldfish: 0/32\"),\n"
    "a table per run and charts. Reads scan files only; never loads a model.\n\n"
    "Writes (each to a temporary file renamed into place):\n"
    "  OUTDIR/report.html  one self-contained page: inline CSS and SVG charts, no scripts,\n"
    "                      no external resources (open it anywhere, mail it, archive it)\n"
    "  OUTDIR/report.md    the same tables in Markdown (no charts)\n"
    "  OUTDIR/report.json  the combined data: {\"schema\":\"axmem-report\",\"version\":1,...}\n\n"
    "Per run it shows: checkpoint path and step, goldfish spec, dataset identity (path,\n"
    "xxh3, documents, tokens); the extraction probe (exact-match rate with 95% CI, token\n"
    "accuracy, RougeL, mean matched prefix, exact match by duplication when probed with\n"
    "--index) and its most memorized samples (doc, offset, matched prefix; decoded text only\n"
    "if samples.jsonl holds it, i.e. the probe ran with --tokenizer); the regurgitation scan\n"
    "(generations with a verbatim training span, mean/max longest span, span histogram);\n"
    "final training loss and val_loss. Charts: exact-match rate per run with CI whiskers,\n"
    "matched-prefix histograms, longest-span histograms, loss curves (val_loss as circles),\n"
    "and the training set's duplication histogram with --index.\n\n"
    "flags:\n"
    "  --run LABEL=DIR       a run directory (repeatable; LABEL names it in tables/charts).\n"
    "                        Reads whichever of these exist, at least one of the first two:\n"
    "                          DIR/scan.json           `memscan probe` (extraction-probe)\n"
    "                          DIR/regurgitation.json  `memscan generate` (regurgitation-scan)\n"
    "                          DIR/samples.jsonl       the probe's per-document rows\n"
    "                          DIR/metrics.jsonl       `axmem train`'s training log\n"
    "  --scan LABEL=FILE     one scan file (either kind); two --scan with the same LABEL\n"
    "                        (a probe and a regurgitation scan) form one run\n"
    "  --index INDEX.json    the sidecar `memscan index --out INDEX` wrote next to INDEX:\n"
    "                        adds the training set's duplication histogram\n"
    "  --out OUTDIR          output directory, created if missing (required)\n"
    "  --title T             page title (default: \"axmem memorization report: A vs B\")\n"
    "  --text-chars N        characters of decoded sample text shown (default 80; 0 hides it)\n\n"
    "Scan files must have schema \"axmem-scan\", version 1; anything else is refused with\n"
    "the file and version named.\n\n"
    "example (after `axmem demo --out runs/demo`):\n"
    "  axmem report --run baseline=runs/demo/baseline --run goldfish=runs/demo/goldfish \\\n"
    "               --index runs/demo/memo.index.json --out runs/demo/report\n";

static int usage(const char *fmt, const char *arg) {
    fprintf(stderr, "axmem report: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "; see 'axmem report --help'\n");
    return 2;
}

/* "LABEL=PATH" -> input (pointing into argv) */
static int split_input(const char *flag, const char *val, int is_file, ax_report_input *in,
                       char **label_store) {
    const char *eq = strchr(val, '=');
    if (!eq || eq == val || !eq[1]) {
        fprintf(stderr, "axmem report: %s needs LABEL=%s, got '%s'; see 'axmem report --help'\n",
                flag, is_file ? "FILE" : "DIR", val);
        return 2;
    }
    *label_store = strndup(val, (size_t)(eq - val));
    if (!*label_store) {
        fprintf(stderr, "axmem report: out of memory\n");
        return 1;
    }
    in->label = *label_store, in->path = eq + 1, in->is_file = is_file;
    return 0;
}

static int add_input(int r, const char *flag, const char *v, int is_file, ax_report_opts *o,
                     ax_report_input *inputs, char **labels) {
    if (r < 0) return usage("%s needs LABEL=PATH", flag);
    int rc = split_input(flag, v, is_file, &inputs[o->n_inputs], &labels[o->n_inputs]);
    if (!rc) o->n_inputs++;
    return rc;
}

int ax_cmd_report(int argc, char **argv) {
    ax_report_input *inputs = calloc((size_t)argc, sizeof *inputs);
    char **labels = calloc((size_t)argc, sizeof *labels);
    ax_report_opts o = {.inputs = inputs, .text_chars = 80};
    int rc = 0;
    if (!inputs || !labels) {
        fprintf(stderr, "axmem report: out of memory\n");
        rc = 1;
        goto out;
    }
    for (int i = 1; i < argc && !rc; i++) {
        const char *v = NULL;
        int r;
        if (ax_cli_is_help(argv[i])) {
            fputs(HELP, stdout);
            goto out;
        } else if ((r = ax_cli_flag(argc, argv, &i, "--run", &v))) {
            rc = add_input(r, "--run", v, 0, &o, inputs, labels);
        } else if ((r = ax_cli_flag(argc, argv, &i, "--scan", &v))) {
            rc = add_input(r, "--scan", v, 1, &o, inputs, labels);
        } else if ((r = ax_cli_flag(argc, argv, &i, "--index", &v))) {
            if (r < 0) rc = usage("%s needs a value", "--index");
            o.index = v;
        } else if ((r = ax_cli_flag(argc, argv, &i, "--out", &v))) {
            if (r < 0) rc = usage("%s needs a value", "--out");
            o.out = v;
        } else if ((r = ax_cli_flag(argc, argv, &i, "--title", &v))) {
            if (r < 0) rc = usage("%s needs a value", "--title");
            o.title = v;
        } else if ((r = ax_cli_flag(argc, argv, &i, "--text-chars", &v))) {
            char *end = NULL;
            long n = r > 0 ? strtol(v, &end, 10) : -1;
            if (r < 0 || !*v || *end || n < 0 || n > 100000)
                rc = usage("--text-chars needs a count 0..100000, got '%s'", r > 0 ? v : "");
            o.text_chars = (int)n;
        } else {
            rc = usage("unknown argument '%s'", argv[i]);
        }
    }
    if (rc) goto out;
    if (!o.n_inputs) {
        rc = usage("%sgive at least one --run LABEL=DIR or --scan LABEL=FILE", "");
        goto out;
    }
    if (!o.out || !o.out[0]) {
        rc = usage("%s--out OUTDIR is required", "");
        goto out;
    }
    ax_error_clear();
    ax_status st = ax_report_build(&o);
    if (st != AX_OK) {
        const char *m = ax_error_msg();
        fprintf(stderr, "axmem report: %s\n", m[0] ? m : ax_status_str(st));
        rc = st == AX_ERR_ARG ? 2 : 1;
        goto out;
    }
    printf("wrote %s/report.html, report.md, report.json\n", o.out);
out:
    for (int i = 0; labels && i < argc; i++) free(labels[i]);
    free(labels), free(inputs);
    return rc;
}
