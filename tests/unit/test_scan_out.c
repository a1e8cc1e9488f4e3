/* Scan outputs: the scan JSON and its samples are published together (complete or absent,
 * also on a full disk), samples are private (0600), probe and generate name their files
 * apart, and `axmem report` refuses samples that do not belong to the scan and can redact
 * every output. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "lib/core/fsutil.h"
#include "lib/core/json.h"
#include "memscan/scan_out.h"
#include "reports/report.h"

static char root[64], path[512];

static void setup(void) {
    snprintf(root, sizeof root, "/tmp/axscan-XXXXXX");
    cr_assert_not_null(mkdtemp(root));
    ax_error_clear();
}

static void teardown(void) {
    ax_rm_rf(root);
}

static const char *at(const char *rel) {
    snprintf(path, sizeof path, "%s/%s", root, rel);
    return path;
}

static int mode_of(const char *rel) {
    struct stat sb;
    cr_assert_eq(stat(at(rel), &sb), 0, "%s missing", rel);
    return (int)(sb.st_mode & 0777);
}

/* entries of root/dir other than . and .. */
static int entries(const char *dir) {
    DIR *d = opendir(at(dir));
    cr_assert_not_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

/* A probe scan of n samples (suffix 4, none exact) through the writer: rows carry the text
 * "secret passage K" (the training text a report must be able to hide). pad: bytes of filler
 * per row, to make the samples large. */
static ax_status write_probe(const char *rel_out, const char *samples_out, int n, int pad) {
    char out[512];
    snprintf(out, sizeof out, "%s/%s", root, rel_out);
    ax_ms_scan_out so;
    ax_status st = ax_ms_scan_out_open(&so, out, samples_out);
    char *filler = calloc((size_t)pad + 1, 1);
    memset(filler, 'x', (size_t)pad);
    for (int i = 0; st == AX_OK && i < n; i++) {
        char text[64];
        snprintf(text, sizeof text, "secret passage %d", i);
        ax_jw w;
        ax_jw_init(&w);
        ax_jw_obj_begin(&w);
        ax_jw_key(&w, "i"), ax_jw_int(&w, i);
        ax_jw_key(&w, "doc"), ax_jw_int(&w, i % 4);
        ax_jw_key(&w, "offset"), ax_jw_int(&w, 0);
        ax_jw_key(&w, "exact"), ax_jw_bool(&w, 0);
        ax_jw_key(&w, "matched_prefix"), ax_jw_int(&w, i % 4);
        ax_jw_key(&w, "token_accuracy"), ax_jw_num(&w, 0.25);
        ax_jw_key(&w, "truth_text"), ax_jw_str(&w, text);
        ax_jw_key(&w, "generated_text"), ax_jw_str(&w, text);
        ax_jw_key(&w, "pad"), ax_jw_str(&w, filler);
        ax_jw_obj_end(&w);
        st = ax_ms_scan_out_line(&so, &w);
        ax_jw_free(&w);
    }
    free(filler);
    ax_jw w;
    ax_jw_init(&w);
    ax_jw_obj_begin(&w);
    ax_jw_key(&w, "schema"), ax_jw_str(&w, "axmem-scan");
    ax_jw_key(&w, "version"), ax_jw_int(&w, 1);
    ax_jw_key(&w, "kind"), ax_jw_str(&w, "extraction-probe");
    ax_jw_key(&w, "checkpoint"),
        ax_jw_raw(&w, "{\"path\":\"/ck/step-000001\",\"step\":1,\"goldfish\":\"none\"}");
    ax_jw_key(&w, "dataset"),
        ax_jw_raw(&w, "{\"path\":\"/d.axd\",\"xxh3\":\"0x01\",\"docs\":4,\"tokens\":400}");
    ax_jw_key(&w, "config"), ax_jw_raw(&w, "{\"prefix\":8,\"suffix\":4}");
    ax_jw_key(&w, "metrics");
    ax_jw_raw(&w, "{\"exact_match_rate\":{\"mean\":0,\"ci95\":[0,0]},\"token_accuracy\":{\"mean\":"
                  "0.25,\"ci95\":[0.25,0.25]},\"rouge_l\":{\"mean\":0.25,\"ci95\":[0.25,0.25]},"
                  "\"matched_prefix_mean\":1.5}");
    char hist[128];
    snprintf(hist, sizeof hist, "{\"matched_prefix_hist\":[%d,%d,%d,%d,0]}", (n + 3) / 4,
             (n + 2) / 4, (n + 1) / 4, n / 4);
    ax_jw_key(&w, "tables"), ax_jw_raw(&w, hist);
    if (st == AX_OK) ax_ms_scan_out_record(&so, &w);
    ax_jw_obj_end(&w);
    if (st == AX_OK) st = ax_ms_scan_out_commit(&so, &w);
    ax_ms_scan_out_close(&so);
    ax_jw_free(&w);
    return st;
}

static ax_status report(const char *label_dir, int redact, int text_chars) {
    ax_report_input in[] = {{"r", at(label_dir), 0}};
    char out[512];
    snprintf(out, sizeof out, "%s/out", root);
    char dir[512];
    snprintf(dir, sizeof dir, "%s", in[0].path);
    in[0].path = dir;
    ax_report_opts o = {
        .inputs = in, .n_inputs = 1, .out = out, .text_chars = text_chars, .redact = redact};
    ax_error_clear();
    return ax_report_build(&o);
}

static char *slurp(const char *rel) {
    char *text = NULL;
    size_t len = 0;
    cr_assert_eq(ax_read_file(at(rel), &text, &len), AX_OK, "%s", ax_error_msg());
    return text;
}

Test(scan_out, samples_are_named_after_the_scan) {
    char d[256];
    ax_ms_samples_path("", "probe.json", d, sizeof d);
    cr_assert_str_eq(d, "probe.samples.jsonl");
    ax_ms_samples_path("", "runs/a/regurgitation.json", d, sizeof d);
    cr_assert_str_eq(d, "runs/a/regurgitation.samples.jsonl");
    ax_ms_samples_path("", "out/scan", d, sizeof d);
    cr_assert_str_eq(d, "out/scan.samples.jsonl");
    ax_ms_samples_path("x/s.jsonl", "probe.json", d, sizeof d);
    cr_assert_str_eq(d, "x/s.jsonl");
}

Test(scan_out, publishes_both_files_with_a_record, .init = setup, .fini = teardown) {
    cr_assert_eq(write_probe("probe.json", "", 8, 0), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(entries("."), 2, "only probe.json and probe.samples.jsonl, no temporaries");
    cr_assert_eq(mode_of("probe.samples.jsonl"), 0600, "samples hold training text");
    char *scan = slurp("probe.json"), *samples = slurp("probe.samples.jsonl");
    ax_json *v = NULL;
    cr_assert_eq(ax_json_parse(scan, strlen(scan), "probe.json", &v), AX_OK);
    const ax_json *rec = ax_json_get(v, "samples");
    const char *file;
    int64_t bytes, lines;
    uint64_t h;
    cr_assert_eq(ax_json_get_str(rec, "file", "r", &file), AX_OK);
    cr_assert_str_eq(file, "probe.samples.jsonl");
    cr_assert_eq(ax_json_get_i64(rec, "bytes", "r", &bytes), AX_OK);
    cr_assert_eq(ax_json_get_i64(rec, "lines", "r", &lines), AX_OK);
    cr_assert_eq(ax_json_get_hex64(rec, "xxh3", "r", &h), AX_OK);
    cr_assert_eq((size_t)bytes, strlen(samples));
    cr_assert_eq(lines, 8);
    cr_assert_eq(h, XXH3_64bits(samples, strlen(samples)));
    ax_json_free(v);
    free(scan), free(samples);
    /* a second scan replaces both */
    cr_assert_eq(write_probe("probe.json", "", 4, 0), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(entries("."), 2);
    cr_assert_eq(report(".", 0, 80), AX_OK, "%s", ax_error_msg());
}

Test(scan_out, refuses_one_name_for_both, .init = setup, .fini = teardown) {
    ax_ms_scan_out so;
    cr_assert_eq(ax_ms_scan_out_open(&so, at("s.json"), at("s.json")), AX_ERR_ARG);
    ax_ms_scan_out_close(&so);
    cr_assert(strstr(ax_error_msg(), "--samples-out"), "%s", ax_error_msg());
    cr_assert_eq(entries("."), 0);
}

/* a full disk, simulated with a file-size limit (writes past it fail with EFBIG) */
static void limit_file_size(rlim_t bytes) {
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {bytes, bytes};
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
}

Test(scan_out, full_disk_leaves_no_scan_json, .init = setup, .fini = teardown) {
    limit_file_size(16384);
    cr_assert_neq(write_probe("probe.json", "", 64, 400), AX_OK, "a 30 kB scan cannot be written");
    cr_assert(strstr(ax_error_msg(), "probe.samples.jsonl"), "%s", ax_error_msg());
    cr_assert_eq(entries("."), 0, "neither a scan JSON nor a temporary is left");
}

Test(scan_out, full_disk_keeps_the_previous_complete_scan, .init = setup, .fini = teardown) {
    cr_assert_eq(write_probe("probe.json", "", 4, 0), AX_OK, "%s", ax_error_msg());
    char *before = slurp("probe.samples.jsonl");
    limit_file_size(16384);
    cr_assert_neq(write_probe("probe.json", "", 64, 400), AX_OK);
    cr_assert_eq(entries("."), 2);
    char *after = slurp("probe.samples.jsonl");
    cr_assert_str_eq(before, after, "the old samples are untouched");
    cr_assert_eq(report(".", 0, 80), AX_OK, "the old scan is still complete: %s", ax_error_msg());
    free(before), free(after);
}

Test(scan_out, report_refuses_samples_of_another_scan, .init = setup, .fini = teardown) {
    cr_assert_eq(write_probe("probe.json", "", 8, 0), AX_OK, "%s", ax_error_msg());
    char *samples = slurp("probe.samples.jsonl");
    /* same size, one byte changed */
    char *p = strstr(samples, "passage 3");
    p[8] = '4';
    FILE *f = fopen(at("probe.samples.jsonl"), "w");
    fputs(samples, f);
    fclose(f);
    cr_assert_eq(report(".", 0, 80), AX_ERR_MISMATCH);
    cr_assert(strstr(ax_error_msg(), "probe.samples.jsonl") && strstr(ax_error_msg(), "probe.json"),
              "names both files: %s", ax_error_msg());
    /* cut short (the last line lost) */
    p[8] = '3';
    *strrchr(samples, '{') = 0;
    f = fopen(at("probe.samples.jsonl"), "w");
    fputs(samples, f);
    fclose(f);
    cr_assert_eq(report(".", 0, 80), AX_ERR_MISMATCH);
    cr_assert(strstr(ax_error_msg(), "does not belong to"), "%s", ax_error_msg());
    /* gone */
    remove(at("probe.samples.jsonl"));
    cr_assert_neq(report(".", 0, 80), AX_OK);
    cr_assert(strstr(ax_error_msg(), "probe.samples.jsonl") && strstr(ax_error_msg(), "probe.json"),
              "%s", ax_error_msg());
    free(samples);
}

Test(scan_out, samples_elsewhere_are_found_from_the_record, .init = setup, .fini = teardown) {
    cr_assert_eq(ax_mkdir_p(at("other")), AX_OK);
    char sp[512];
    snprintf(sp, sizeof sp, "%s/other/mine.jsonl", root);
    cr_assert_eq(write_probe("probe.json", sp, 4, 0), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(report(".", 0, 80), AX_OK, "%s", ax_error_msg());
    char *js = slurp("out/report.json");
    cr_assert(strstr(js, "other/mine.jsonl"), "the report names the samples it read");
    free(js);
}

/* 1 if any file in root/out contains needle */
static int out_contains(const char *needle) {
    static const char *names[] = {"out/report.html", "out/report.md", "out/report.json"};
    int hit = 0;
    cr_assert_eq(entries("out"), 3, "exactly the three reports");
    for (int k = 0; k < 3; k++) {
        char *t = slurp(names[k]);
        hit |= strstr(t, needle) != NULL;
        free(t);
    }
    return hit;
}

Test(scan_out, redaction_removes_text_from_every_output, .init = setup, .fini = teardown) {
    cr_assert_eq(write_probe("probe.json", "", 8, 0), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(report(".", 0, 80), AX_OK, "%s", ax_error_msg());
    cr_assert(out_contains("secret passage"), "the unredacted report quotes the samples");
    cr_assert_eq(mode_of("out/report.json"), 0600);
    cr_assert_eq(mode_of("out/report.html"), 0600);
    cr_assert_eq(mode_of("out/report.md"), 0600);
    cr_assert_eq(report(".", 1, 80), AX_OK, "%s", ax_error_msg());
    cr_assert_not(out_contains("secret"), "--redact: no training text in any output");
    char *js = slurp("out/report.json");
    cr_assert(strstr(js, "\"redacted\":true"));
    free(js);
    cr_assert_eq(report(".", 0, 0), AX_OK, "%s", ax_error_msg());
    cr_assert_not(out_contains("secret"), "--text-chars 0 applies to report.json too");
}

Test(scan_out, older_layout_overwritten_by_generate_is_named, .init = setup, .fini = teardown) {
    /* an older axmem: scan.json without a samples record, samples.jsonl that generate wrote */
    cr_assert_eq(write_probe("scan.json", "", 4, 0), AX_OK, "%s", ax_error_msg());
    char *scan = slurp("scan.json");
    *strstr(scan, ",\"samples\":{") = 0;
    FILE *f = fopen(at("scan.json"), "w");
    fprintf(f, "%s}\n", scan);
    fclose(f);
    free(scan);
    remove(at("scan.samples.jsonl"));
    f = fopen(at("samples.jsonl"), "w");
    fputs("{\"i\":0,\"longest_span\":0,\"spans\":[],\"tokens\":[1,2]}\n", f);
    fclose(f);
    cr_assert_eq(report(".", 0, 80), AX_ERR_MISMATCH);
    cr_assert(strstr(ax_error_msg(), "samples.jsonl") && strstr(ax_error_msg(), "scan.json") &&
                  strstr(ax_error_msg(), "memscan generate"),
              "%s", ax_error_msg());
    /* the older layout itself still reads */
    f = fopen(at("samples.jsonl"), "w");
    for (int i = 0; i < 4; i++)
        fprintf(f, "{\"i\":%d,\"doc\":0,\"offset\":0,\"exact\":false,\"matched_prefix\":%d}\n", i,
                i);
    fclose(f);
    cr_assert_eq(report(".", 0, 80), AX_OK, "%s", ax_error_msg());
    /* a new probe.json beside it: two probes, named */
    cr_assert_eq(write_probe("probe.json", "", 4, 0), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(report(".", 0, 80), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "probe.json") && strstr(ax_error_msg(), "scan.json"), "%s",
              ax_error_msg());
}

Test(scan_out, private_files_are_0600_whatever_the_umask, .init = setup, .fini = teardown) {
    umask(0); /* the most permissive umask: 0666 files unless the helper says otherwise */
    FILE *f = fopen(at("old"), "w");
    fclose(f);
    cr_assert_eq(mode_of("old"), 0666);
    cr_assert_eq(ax_write_file_private(at("old"), "x", 1), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(mode_of("old"), 0600, "an existing file is narrowed too");
    f = ax_fopen_private(at("new"));
    cr_assert_not_null(f);
    fclose(f);
    cr_assert_eq(mode_of("new"), 0600);
    char tmp[512];
    int fd;
    cr_assert_eq(ax_create_temp(at("pub.json"), 0, tmp, sizeof tmp, &fd), AX_OK);
    close(fd);
    cr_assert(strstr(tmp, "/.pub.json.tmp-"), "%s", tmp);
    cr_assert_eq(mode_of(strrchr(tmp, '/') + 1), 0666, "a public temporary follows the umask");
}
