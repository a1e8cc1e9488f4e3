/* libFuzzer target: the scan files `axmem report` reads (reports/load.c) from a run directory
 * (probe.json and the samples file it records, metrics.jsonl, regurgitation.json and its
 * samples file) plus the index sidecar INDEX.json, then the summary and all three renderers.
 *
 * The input holds six parts separated by lines "@@@@" (an empty or missing part: no such
 * file): probe scan JSON, probe samples, metrics.jsonl, regurgitation scan JSON, its samples,
 * INDEX.json. A probe JSON without a "samples" record is the older layout and is written as
 * scan.json with its samples in samples.jsonl; otherwise the samples go to the names memscan
 * gives them (probe.samples.jsonl, regurgitation.samples.jsonl).
 *
 * A scan records its samples file's size, line count and XXH3, so nearly every mutation of a
 * samples file would stop at that check. Each input is therefore tried twice, like the binary
 * readers' targets: as is, and with every "samples" record recomputed from the samples part
 * (the JSON re-serialised with the true bytes, lines and xxh3; the recorded "file" kept as
 * mutated), which takes it on to the samples and metrics parsers. The second pass reports
 * with --redact and checks that report.json then holds no sample text. */
#include "fuzz_util.h"
#include "lib/core/json.h"
#include "reports/report.h"

#include <xxhash.h>

enum { P_PROBE, P_PROBE_SAMPLES, P_METRICS, P_REGURG, P_REGURG_SAMPLES, P_INDEX, N_PARTS };
enum {
    F_PROBE,
    F_LEGACY,
    F_PROBE_SAMPLES,
    F_LEGACY_SAMPLES,
    F_METRICS,
    F_REGURG,
    F_REGURG_SAMPLES,
    F_INDEX,
    N_FILES
};
static const char *names[N_FILES] = {
    "probe.json",    "scan.json",          "probe.samples.jsonl",         "samples.jsonl",
    "metrics.jsonl", "regurgitation.json", "regurgitation.samples.jsonl", "INDEX.json"};
static char run_dir[512], paths[N_FILES][600];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fz_init("scan");
    fz_path(run_dir, sizeof run_dir, "run");
    if (ax_mkdir_p(run_dir) != AX_OK) abort();
    for (int k = 0; k < N_FILES; k++)
        snprintf(paths[k], sizeof paths[k], "%s/%s", run_dir, names[k]);
    return 0;
}

typedef struct {
    const uint8_t *p;
    size_t n;
} part;

static const uint8_t *find_sep(const uint8_t *p, const uint8_t *end) {
    static const char sep[] = "\n@@@@\n";
    for (; p + 6 <= end; p++)
        if (!memcmp(p, sep, 6)) return p;
    return NULL;
}

static void split(const uint8_t *data, size_t size, part parts[N_PARTS]) {
    const uint8_t *p = data, *end = data + size;
    for (int k = 0; k < N_PARTS; k++) {
        parts[k].p = NULL, parts[k].n = 0;
        if (!p) continue;
        const uint8_t *s = find_sep(p, end), *e = s ? s : end;
        parts[k].p = p, parts[k].n = (size_t)(e - p);
        p = s ? s + 6 : NULL;
    }
}

static void put(int file, part pt) {
    if (pt.n) fz_write(paths[file], pt.p, pt.n);
}

/* v as JSON text; its top-level "samples" object gets the true record of `samples` */
static void emit(ax_jw *w, const ax_json *v, part samples) {
    if (v->type != AX_JSON_OBJ) {
        ax_jw_json(w, v);
        return;
    }
    ax_jw_obj_begin(w);
    for (size_t k = 0; k < v->n; k++) {
        const ax_json *it = v->items[k];
        ax_jw_key(w, v->keys[k]);
        if (strcmp(v->keys[k], "samples") || it->type != AX_JSON_OBJ) {
            ax_jw_json(w, it);
            continue;
        }
        uint64_t lines = 0;
        for (size_t i = 0; i < samples.n; i++) lines += samples.p[i] == '\n';
        char hex[32];
        snprintf(hex, sizeof hex, "0x%016llx",
                 (unsigned long long)XXH3_64bits(samples.p, samples.n));
        ax_jw_obj_begin(w);
        for (size_t i = 0; i < it->n; i++) { /* "file" and anything else as mutated */
            const char *key = it->keys[i];
            if (!strcmp(key, "bytes") || !strcmp(key, "lines") || !strcmp(key, "xxh3")) continue;
            ax_jw_key(w, key);
            ax_jw_json(w, it->items[i]);
        }
        ax_jw_key(w, "bytes"), ax_jw_uint(w, samples.n);
        ax_jw_key(w, "lines"), ax_jw_uint(w, lines);
        ax_jw_key(w, "xxh3"), ax_jw_str(w, hex);
        ax_jw_obj_end(w);
    }
    ax_jw_obj_end(w);
}

/* Writes a scan JSON part (recomputing its samples record when fix) to scan_file and its
 * samples part to samples_file (an older layout's names when it records no samples). */
static void put_scan(part scan, part samples, int fix, int scan_file, int samples_file,
                     int legacy_scan, int legacy_samples) {
    ax_json *v = NULL;
    int has_rec = 0;
    if (scan.n && ax_json_parse((const char *)scan.p, scan.n, "fuzz", &v) == AX_OK)
        has_rec = ax_json_get(v, "samples") != NULL;
    ax_error_clear();
    if (legacy_scan >= 0 && v && !has_rec) /* an older axmem's layout */
        scan_file = legacy_scan, samples_file = legacy_samples;
    put(samples_file, samples);
    ax_jw w;
    ax_jw_init(&w);
    if (fix && has_rec) emit(&w, v, samples);
    const char *text = fix && has_rec ? ax_jw_text(&w) : NULL;
    if (text)
        fz_write(paths[scan_file], (const uint8_t *)text, strlen(text));
    else
        put(scan_file, scan);
    ax_jw_free(&w);
    ax_json_free(v);
}

static void report(const part parts[N_PARTS], int fix) {
    for (int k = 0; k < N_FILES; k++) unlink(paths[k]);
    put_scan(parts[P_PROBE], parts[P_PROBE_SAMPLES], fix, F_PROBE, F_PROBE_SAMPLES, F_LEGACY,
             F_LEGACY_SAMPLES);
    put_scan(parts[P_REGURG], parts[P_REGURG_SAMPLES], fix, F_REGURG, F_REGURG_SAMPLES, -1, -1);
    put(F_METRICS, parts[P_METRICS]);
    put(F_INDEX, parts[P_INDEX]);
    ax_report_input in = {"run", run_dir, 0};
    char out[600], json_path[700];
    snprintf(out, sizeof out, "%s/out", fz_dir);
    snprintf(json_path, sizeof json_path, "%s/report.json", out);
    unlink(json_path);
    ax_report_opts o = {.inputs = &in,
                        .n_inputs = 1,
                        .index = parts[P_INDEX].n ? paths[F_INDEX] : NULL,
                        .out = out,
                        .title = NULL,
                        .text_chars = 40,
                        .redact = fix};
    ax_error_clear();
    ax_status st = ax_report_build(&o);
    fz_note(fix ? "report (records recomputed, redacted)" : "report", st);
    if (st == AX_OK) { /* what it wrote must be valid JSON, without text when redacted */
        char *t;
        size_t len;
        ax_json *j = NULL;
        if (ax_read_file(json_path, &t, &len) != AX_OK ||
            ax_json_parse(t, len, "report.json", &j) != AX_OK) {
            fprintf(stderr, "report.json unreadable: %s\n", ax_error_msg());
            abort();
        }
        if (fix &&
            (memmem(t, len, "\"truth_text\"", 12) || memmem(t, len, "\"generated_text\"", 16))) {
            fprintf(stderr, "redacted report.json holds sample text\n");
            abort();
        }
        ax_json_free(j);
        free(t);
    }
    ax_error_clear();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    part parts[N_PARTS];
    split(data, size, parts);
    report(parts, 0);
    report(parts, 1); /* again with the samples records made right, redacted */
    return 0;
}
