/* Scans inside training (train/train_run.h: ax_train_run_scan with a hook): they run at multiples
 * of
 * --scan-every on a checkpoint written there, log a record to metrics.jsonl, flag a rate above
 * the previous scan's upper bound, never change the losses, fail a bad scan config before the
 * first step, and carry over a resume (the previous bound, and a scan lost to a crash). The
 * hook here is scripted (rates by step), so the test checks training's side alone; the real
 * probe is wired in train/train_scan.c and tested in tests/cli/over_steps.sh. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/axd.h"
#include "lib/core/fsutil.h"
#include "lib/core/json.h"
#include "lib/core/rng.h"
#include "train/train_run.h"

typedef struct {
    int prepared, fail_prepare;
    int n;
    long steps[16];
    int ckpt_present[16];
} fake;

static double rate_at(long step) {
    return step == 4 ? 0.6 : step == 6 ? 0.7 : 0.1;
}

static ax_status fake_prepare(void *ctx, const ax_train_config *cfg) {
    fake *f = ctx;
    f->prepared++;
    if (f->fail_prepare)
        return ax_errorf(AX_ERR_ARG, "--scan-config %s: scripted failure", cfg->scan_config);
    return AX_OK;
}

static ax_status fake_scan(void *ctx, const ax_train_scan_point *p, ax_jw *rec, double *rate,
                           double *lo, double *hi) {
    fake *f = ctx;
    char m[600];
    snprintf(m, sizeof m, "%s/manifest.json", p->ckpt);
    if (f->n < 16) f->steps[f->n] = p->step, f->ckpt_present[f->n] = ax_path_exists(m);
    f->n++;
    *rate = rate_at(p->step), *lo = *rate - 0.05, *hi = *rate + 0.05;
    ax_jw_key(rec, "exact_match"), ax_jw_num(rec, *rate);
    ax_jw_key(rec, "exact_match_lo"), ax_jw_num(rec, *lo);
    ax_jw_key(rec, "exact_match_hi"), ax_jw_num(rec, *hi);
    return AX_OK;
}

static void make_data(const char *path) {
    ax_axd_writer_t *w = NULL;
    cr_assert_eq(ax_axd_writer_create(path, 257, &w), AX_OK, "%s", ax_error_msg());
    for (int d = 0; d < 8; d++) {
        int32_t doc[48];
        for (int i = 0; i < 48; i++)
            doc[i] = (int32_t)ax_rng_below(12, (uint64_t)d, (uint64_t)i, 3);
        cr_assert_eq(ax_axd_writer_add_doc(w, doc, 48), AX_OK);
    }
    cr_assert_eq(ax_axd_writer_close(w), AX_OK, "%s", ax_error_msg());
}

static void config(ax_train_config *c, const char *data, const char *out, int scan) {
    cr_assert_eq(ax_cfg_set_defaults(&ax_train_table, c), AX_OK);
    snprintf(c->data, sizeof c->data, "%s", data);
    snprintf(c->out, sizeof c->out, "%s", out);
    c->layers = 1, c->dim = 16, c->heads = 2, c->ffn = 24;
    c->seq_len = 16, c->batch = 2, c->steps = 6, c->warmup = 1, c->threads = 1;
    c->log_every = 1000;
    if (scan) c->scan_every = 2, snprintf(c->scan_config, sizeof c->scan_config, "scan.cfg");
}

/* metrics.jsonl: losses of the step lines, and the scan records' steps and rising flags */
typedef struct {
    int n_loss, n_scan;
    double loss[16];
    long scan_step[16];
    int rising[16];
} metrics;

static void read_metrics(const char *run, metrics *m) {
    char path[256], *text = NULL;
    size_t len = 0;
    memset(m, 0, sizeof *m);
    snprintf(path, sizeof path, "%s/metrics.jsonl", run);
    cr_assert_eq(ax_read_file(path, &text, &len), AX_OK, "%s", ax_error_msg());
    for (char *l = text, *e; l && *l; l = e ? e + 1 : NULL) {
        e = strchr(l, '\n');
        ax_json *j = NULL;
        cr_assert_eq(ax_json_parse(l, e ? (size_t)(e - l) : strlen(l), path, &j), AX_OK);
        if (ax_json_get(j, "scan")) {
            cr_assert_str_eq(ax_json_get(j, "scan")->str, "probe");
            cr_assert(m->n_scan < 16);
            m->scan_step[m->n_scan] = (long)ax_json_get(j, "step")->num;
            m->rising[m->n_scan++] = (int)ax_json_get(j, "extraction_rising")->num;
        } else {
            cr_assert(m->n_loss < 16);
            m->loss[m->n_loss++] = ax_json_get(j, "loss")->num;
        }
        ax_json_free(j);
    }
    free(text);
}

static const ax_train_scan_hook *hook_of(fake *f) {
    static ax_train_scan_hook h;
    h = (ax_train_scan_hook){"probe", "exact_match", fake_prepare, fake_scan, f};
    return &h;
}

static void paths(const char *tag, char *data, char *a, char *b) {
    int pid = (int)getpid();
    snprintf(data, 128, "/tmp/axmem_ts_%d_%s.axd", pid, tag);
    snprintf(a, 128, "/tmp/axmem_ts_%d_%s_a", pid, tag);
    snprintf(b, 128, "/tmp/axmem_ts_%d_%s_b", pid, tag);
    make_data(data);
}

static void cleanup(const char *data, const char *a, const char *b) {
    ax_rm_rf(a), ax_rm_rf(b);
    unlink(data);
}

Test(train_scan, scans_at_checkpoints_log_records_and_leave_losses_alone) {
    char data[128], a[128], b[128];
    paths("base", data, a, b);
    fake f = {0};
    ax_train_config c;
    ax_train_result r;
    config(&c, data, a, 1);
    cr_assert_eq(ax_train_run_scan(&c, NULL, hook_of(&f), &r), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(f.prepared, 1);
    cr_assert_eq(f.n, 3);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(f.steps[i], 2 * (i + 1));
        cr_assert(f.ckpt_present[i], "no checkpoint when step %ld was scanned", f.steps[i]);
    }
    metrics m, plain;
    read_metrics(a, &m);
    cr_assert_eq(m.n_loss, 6);
    cr_assert_eq(m.n_scan, 3);
    /* rates 0.1, 0.6, 0.7 with bounds +-0.05: 0.6 > 0.15 and 0.7 > 0.65 rise */
    cr_assert_eq(m.scan_step[0], 2);
    cr_assert_eq(m.rising[0], 0);
    cr_assert_eq(m.scan_step[1], 4);
    cr_assert_eq(m.rising[1], 1);
    cr_assert_eq(m.scan_step[2], 6);
    cr_assert_eq(m.rising[2], 1);

    config(&c, data, b, 0); /* the same run without scans: the same losses, bit for bit */
    cr_assert_eq(ax_train_run(&c, NULL, &r), AX_OK, "%s", ax_error_msg());
    read_metrics(b, &plain);
    cr_assert_eq(plain.n_loss, 6);
    cr_assert_eq(plain.n_scan, 0);
    for (int i = 0; i < 6; i++)
        cr_assert(memcmp(&m.loss[i], &plain.loss[i], sizeof(double)) == 0,
                  "step %d: %.17g vs %.17g", i + 1, m.loss[i], plain.loss[i]);
    cleanup(data, a, b);
}

Test(train_scan, bad_settings_fail_before_the_first_step) {
    char data[128], a[128], b[128], m[160];
    paths("bad", data, a, b);
    fake f = {.fail_prepare = 1};
    ax_train_config c;
    ax_train_result r;
    config(&c, data, a, 1);
    cr_assert_eq(ax_train_run_scan(&c, NULL, hook_of(&f), &r), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "scripted failure"), "%s", ax_error_msg());
    snprintf(m, sizeof m, "%s/metrics.jsonl", a);
    cr_assert(!ax_path_exists(m), "training started before the scan config was checked");
    ax_error_clear();
    config(&c, data, a, 1); /* no hook: nothing could run the scans */
    cr_assert_eq(ax_train_run(&c, NULL, &r), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "--scan-every needs a scanner"), "%s", ax_error_msg());
    ax_error_clear();
    config(&c, data, a, 1);
    c.scan_config[0] = 0;
    cr_assert_eq(ax_train_run_scan(&c, NULL, hook_of(&f), &r), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "needs --scan-config"), "%s", ax_error_msg());
    ax_error_clear();
    cleanup(data, a, b);
}

Test(train_scan, survives_resume_and_reruns_a_lost_scan) {
    char data[128], a[128], b[128], path[200];
    paths("resume", data, a, b);
    fake f = {0};
    ax_train_config c;
    ax_train_result r;
    metrics whole, m;
    config(&c, data, b, 1);
    cr_assert_eq(ax_train_run_scan(&c, NULL, hook_of(&f), &r), AX_OK, "%s", ax_error_msg());
    read_metrics(b, &whole);

    /* stopped after step 3: scanned at 2; the resumed run scans 4 and 6 and compares step 4
     * with step 2's bound from metrics.jsonl */
    config(&c, data, a, 1);
    c.exit_after_steps = 3;
    memset(&f, 0, sizeof f);
    cr_assert_eq(ax_train_run_scan(&c, NULL, hook_of(&f), &r), AX_OK, "%s", ax_error_msg());
    cr_assert(r.interrupted);
    cr_assert_eq(f.n, 1);
    ax_train_config rc;
    cr_assert_eq(ax_cfg_set_defaults(&ax_train_table, &rc), AX_OK);
    snprintf(rc.out, sizeof rc.out, "%s", a);
    rc.resume = 1; /* everything else, --scan-every included, from the checkpoint */
    memset(&f, 0, sizeof f);
    cr_assert_eq(ax_train_run_scan(&rc, NULL, hook_of(&f), &r), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(f.n, 2);
    cr_assert_eq(f.steps[0], 4);
    cr_assert_eq(f.steps[1], 6);
    read_metrics(a, &m);
    cr_assert_eq(m.n_scan, 3);
    cr_assert_eq(m.rising[1], 1, "the resumed run lost the previous scan's bound");
    for (int i = 0; i < 6; i++) cr_assert(memcmp(&m.loss[i], &whole.loss[i], sizeof(double)) == 0);

    /* a crash between checkpoint 6 and its record: resume from 6 runs the scan again */
    snprintf(path, sizeof path, "%s/metrics.jsonl", a);
    char *text = NULL;
    size_t len = 0;
    cr_assert_eq(ax_read_file(path, &text, &len), AX_OK);
    char *last = text + len - 1;
    while (last > text && last[-1] != '\n') last--;
    cr_assert(strstr(last, "\"scan\""), "the last line is not the scan record: %s", last);
    cr_assert_eq(ax_write_file(path, text, (size_t)(last - text)), AX_OK);
    free(text);
    memset(&f, 0, sizeof f);
    cr_assert_eq(ax_train_run_scan(&rc, NULL, hook_of(&f), &r), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(f.n, 1);
    cr_assert_eq(f.steps[0], 6);
    read_metrics(a, &m);
    cr_assert_eq(m.n_scan, 3);
    cr_assert_eq(m.scan_step[2], 6);
    cleanup(data, a, b);
}
