/* libFuzzer target: the scan files `axmem report` reads (reports/load.c): a run directory's
 * scan.json, samples.jsonl, metrics.jsonl and regurgitation.json, plus the index sidecar
 * INDEX.json, then the summary and all three renderers. The input holds the five files in
 * that order, separated by lines "@@@@" (a missing part: no such file). */
#include "fuzz_util.h"
#include "lib/core/json.h"
#include "reports/report.h"

#define N_PARTS 5
static const char *names[N_PARTS] = {"scan.json", "samples.jsonl", "metrics.jsonl",
                                     "regurgitation.json", "INDEX.json"};
static char run_dir[512], paths[N_PARTS][600];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fz_init("scan");
    fz_path(run_dir, sizeof run_dir, "run");
    if (ax_mkdir_p(run_dir) != AX_OK) abort();
    for (int k = 0; k < N_PARTS; k++)
        snprintf(paths[k], sizeof paths[k], "%s/%s", run_dir, names[k]);
    return 0;
}

static const uint8_t *find_sep(const uint8_t *p, const uint8_t *end) {
    static const char sep[] = "\n@@@@\n";
    for (; p + 6 <= end; p++)
        if (!memcmp(p, sep, 6)) return p;
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *p = data, *end = data + size;
    int have_index = 0;
    for (int k = 0; k < N_PARTS; k++) {
        unlink(paths[k]);
        if (!p) continue;
        const uint8_t *s = find_sep(p, end);
        const uint8_t *e = s ? s : end;
        if (e > p) fz_write(paths[k], p, (size_t)(e - p)); /* empty part: no such file */
        if (k == 4) have_index = 1;
        p = s ? s + 6 : NULL;
    }
    ax_report_input in = {"run", run_dir, 0};
    char out[600], json_path[700];
    snprintf(out, sizeof out, "%s/out", fz_dir);
    snprintf(json_path, sizeof json_path, "%s/report.json", out);
    unlink(json_path);
    ax_report_opts o = {.inputs = &in,
                        .n_inputs = 1,
                        .index = have_index ? paths[4] : NULL,
                        .out = out,
                        .title = NULL,
                        .text_chars = 40};
    ax_error_clear();
    ax_status st = ax_report_build(&o);
    fz_note("report", st);
    if (st == AX_OK) { /* what it wrote must be valid JSON */
        char *t;
        size_t len;
        ax_json *j = NULL;
        if (ax_read_file(json_path, &t, &len) != AX_OK ||
            ax_json_parse(t, len, "report.json", &j) != AX_OK) {
            fprintf(stderr, "report.json unreadable: %s\n", ax_error_msg());
            abort();
        }
        ax_json_free(j);
        free(t);
    }
    ax_error_clear();
    return 0;
}
