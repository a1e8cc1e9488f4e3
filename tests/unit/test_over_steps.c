/* memscan over training (memscan/over_steps.h): which checkpoints a run has (ascending, partial
 * ones ignored, --steps lists checked), the curve file (one point per step in order, skipped
 * steps with their reason), and `memscan probe --all-steps` in-process on a tiny run with three
 * checkpoints, one of them damaged. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/axd.h"
#include "lib/core/fsutil.h"
#include "lib/core/json.h"
#include "lib/core/rng.h"
#include "cli/commands.h"
#include "memscan/over_steps.h"
#include "train/train_run.h"

static ax_json *read_json(const char *path) {
    char *text = NULL;
    size_t len = 0;
    ax_json *j = NULL;
    cr_assert_eq(ax_read_file(path, &text, &len), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(ax_json_parse(text, len, path, &j), AX_OK, "%s", ax_error_msg());
    free(text);
    return j;
}

static double num_at(const ax_json *v, const char *k1, const char *k2) {
    v = ax_json_get(v, k1);
    if (k2) v = ax_json_get(v, k2);
    cr_assert(v && v->type == AX_JSON_NUM, "no number at %s/%s", k1, k2 ? k2 : "");
    return v->num;
}

static void mkdirs(const char *root, const char *const *names, int n) {
    char p[300];
    for (int i = 0; i < n; i++) {
        snprintf(p, sizeof p, "%s/%s", root, names[i]);
        cr_assert_eq(ax_mkdir_p(p), AX_OK, "%s", ax_error_msg());
    }
}

Test(over_steps, lists_steps_ascending_and_checks_lists) {
    char run[128];
    snprintf(run, sizeof run, "/tmp/axmem_os_%d_list", (int)getpid());
    static const char *const names[] = {"ckpt/step-000010", "ckpt/step-000002",
                                        "ckpt/step-000005", "ckpt/step-000007.partial",
                                        "ckpt/notes",       "ckpt/step-"};
    mkdirs(run, names, 6);
    ax_ms_step *s = NULL;
    int n = 0;
    cr_assert_eq(ax_ms_steps_list(run, NULL, &s, &n), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(n, 3);
    cr_assert_eq(s[0].step, 2);
    cr_assert_eq(s[1].step, 5);
    cr_assert_eq(s[2].step, 10);
    cr_assert(strstr(s[2].path, "/ckpt/step-000010"), "%s", s[2].path);
    free(s);
    cr_assert_eq(ax_ms_steps_list(run, "10,2,2", &s, &n), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(n, 2);
    cr_assert_eq(s[0].step, 2);
    cr_assert_eq(s[1].step, 10);
    free(s);
    cr_assert_eq(ax_ms_steps_list(run, "3", &s, &n), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "no checkpoint step-000003") &&
                  strstr(ax_error_msg(), "steps 2 to 10"),
              "%s", ax_error_msg());
    ax_error_clear();
    cr_assert_eq(ax_ms_steps_list(run, "2,x", &s, &n), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "not a list of step numbers"), "%s", ax_error_msg());
    ax_error_clear();
    char ck[160]; /* the ckpt folder itself is a run too */
    snprintf(ck, sizeof ck, "%s/ckpt", run);
    cr_assert_eq(ax_ms_steps_list(ck, NULL, &s, &n), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(n, 3);
    free(s);
    ax_rm_rf(run);
    cr_assert_eq(ax_mkdir_p(run), AX_OK);
    cr_assert_eq(ax_ms_steps_list(run, NULL, &s, &n), AX_ERR_IO);
    cr_assert(strstr(ax_error_msg(), "holds no checkpoints"), "%s", ax_error_msg());
    ax_error_clear();
    ax_rm_rf(run);
}

Test(over_steps, curve_file_points_in_order_and_skips) {
    char path[128];
    snprintf(path, sizeof path, "/tmp/axmem_os_%d.curve.json", (int)getpid());
    ax_ms_curve *c = NULL;
    cr_assert_eq(ax_ms_curve_new(path, "probe", "RUN", &c), AX_OK);
    for (long s = 1; s <= 3; s++) {
        ax_jw w;
        ax_jw_init(&w);
        ax_ms_curve_point_begin(&w, s * 100, "RUN/ckpt/x");
        ax_jw_key(&w, "exact_match"), ax_jw_num(&w, 0.25 * (double)s);
        ax_jw_obj_end(&w);
        cr_assert_eq(ax_ms_curve_add(c, &w), AX_OK);
        ax_jw_free(&w);
    }
    cr_assert_eq(ax_ms_curve_skip(c, 150, "RUN/ckpt/step-000150", "damaged \"shard\""), AX_OK);
    cr_assert_eq(ax_ms_curve_write(c), AX_OK, "%s", ax_error_msg());
    ax_ms_curve_free(c);
    ax_json *j = read_json(path);
    cr_assert_str_eq(ax_json_get(j, "schema")->str, "axmem-curve");
    cr_assert_str_eq(ax_json_get(j, "scan")->str, "probe");
    const ax_json *p = ax_json_get(j, "points"), *sk = ax_json_get(j, "skipped");
    cr_assert_eq(p->n, 3);
    for (size_t i = 0; i < 3; i++) {
        cr_assert_eq(num_at(p->items[i], "step", NULL), 100.0 * (double)(i + 1));
        cr_assert_eq(num_at(p->items[i], "exact_match", NULL), 0.25 * (double)(i + 1));
    }
    cr_assert_eq(sk->n, 1);
    cr_assert_str_eq(ax_json_get(sk->items[0], "reason")->str, "damaged \"shard\"");
    ax_json_free(j);
    unlink(path);
}

/* a run with checkpoints at steps 2, 4, 6 of a tiny model on 8 documents */
static void make_run(const char *data, const char *run) {
    ax_axd_writer_t *w = NULL;
    cr_assert_eq(ax_axd_writer_create(data, 257, &w), AX_OK, "%s", ax_error_msg());
    for (int d = 0; d < 8; d++) {
        int32_t doc[40];
        for (int i = 0; i < 40; i++) doc[i] = (int32_t)ax_rng_below(8, (uint64_t)d, (uint64_t)i, 5);
        cr_assert_eq(ax_axd_writer_add_doc(w, doc, 40), AX_OK);
    }
    cr_assert_eq(ax_axd_writer_close(w), AX_OK, "%s", ax_error_msg());
    ax_train_config c;
    cr_assert_eq(ax_cfg_set_defaults(&ax_train_table, &c), AX_OK);
    snprintf(c.data, sizeof c.data, "%s", data);
    snprintf(c.out, sizeof c.out, "%s", run);
    c.layers = 1, c.dim = 16, c.heads = 2, c.ffn = 24;
    c.seq_len = 32, c.batch = 2, c.steps = 6, c.warmup = 1, c.threads = 1, c.ckpt_every = 2;
    c.lr = 1e-2;
    ax_train_result r;
    cr_assert_eq(ax_train_run(&c, NULL, &r), AX_OK, "%s", ax_error_msg());
}

static int probe(int n, const char **args) {
    char *argv[24];
    argv[0] = "memscan", argv[1] = "probe";
    for (int i = 0; i < n; i++) argv[i + 2] = (char *)args[i];
    argv[n + 2] = NULL;
    return ax_cmd_memscan(n + 2, argv);
}

Test(over_steps, probe_all_steps_writes_one_point_per_step_and_skips_a_damaged_one) {
    char data[128], run[128], out[160], curve[160], shard[200], scan[200];
    int pid = (int)getpid();
    snprintf(data, sizeof data, "/tmp/axmem_os_%d.axd", pid);
    snprintf(run, sizeof run, "/tmp/axmem_os_%d_run", pid);
    snprintf(out, sizeof out, "/tmp/axmem_os_%d_scans/p.json", pid);
    snprintf(curve, sizeof curve, "/tmp/axmem_os_%d_scans/p.curve.json", pid);
    make_run(data, run);
    const char *common[] = {"--ckpt",   run, "--data",   data, "--samples", "4",
                            "--prefix", "8", "--suffix", "8",  "--out",     out};
    const char *args[20];
    memcpy(args, common, sizeof common);
    int n = (int)(sizeof common / sizeof common[0]);

    args[n] = "--all-steps";
    cr_assert_eq(probe(n + 1, args), 0, "%s", ax_error_msg());
    ax_json *j = read_json(curve);
    const ax_json *p = ax_json_get(j, "points");
    cr_assert_eq(p->n, 3);
    cr_assert_eq(ax_json_get(j, "skipped")->n, 0);
    for (size_t i = 0; i < 3; i++) {
        /* each point holds exactly the numbers of that step's scan file */
        cr_assert_eq(num_at(p->items[i], "step", NULL), 2.0 * (double)(i + 1));
        snprintf(scan, sizeof scan, "/tmp/axmem_os_%d_scans/step-%06d/p.json", pid,
                 2 * (int)(i + 1));
        cr_assert_str_eq(ax_json_get(p->items[i], "scan_file")->str, scan + strlen(scan) - 18);
        ax_json *s = read_json(scan);
        const ax_json *m = ax_json_get(s, "metrics");
        cr_assert_eq(num_at(p->items[i], "exact_match_rate", "mean"),
                     num_at(m, "exact_match_rate", "mean"));
        cr_assert_eq(num_at(p->items[i], "token_accuracy", "mean"),
                     num_at(m, "token_accuracy", "mean"));
        cr_assert_eq(num_at(p->items[i], "samples", NULL), 4);
        ax_json_free(s);
    }
    ax_json_free(j);

    /* step 4's shard truncated: skipped with its reason, the other two still scanned */
    snprintf(shard, sizeof shard, "%s/ckpt/step-000004/params.000.zst", run);
    struct stat sb;
    cr_assert_eq(stat(shard, &sb), 0, "no shard %s (the shard naming changed?)", shard);
    cr_assert_eq(truncate(shard, sb.st_size / 2), 0);
    args[n] = "--steps", args[n + 1] = "6,4,2";
    cr_assert_eq(probe(n + 2, args), 0, "%s", ax_error_msg());
    j = read_json(curve);
    p = ax_json_get(j, "points");
    const ax_json *sk = ax_json_get(j, "skipped");
    cr_assert_eq(p->n, 2);
    cr_assert_eq(num_at(p->items[0], "step", NULL), 2);
    cr_assert_eq(num_at(p->items[1], "step", NULL), 6);
    cr_assert_eq(sk->n, 1);
    cr_assert_eq(num_at(sk->items[0], "step", NULL), 4);
    cr_assert(strstr(ax_json_get(sk->items[0], "reason")->str, "params"), "%s",
              ax_json_get(sk->items[0], "reason")->str);
    ax_json_free(j);

    /* a scan that fails on a checkpoint that opened stops the loop and says where */
    char nope[160];
    snprintf(nope, sizeof nope, "%s.nope", data);
    args[3] = nope, args[n] = "--all-steps";
    cr_assert_eq(probe(n + 1, args), 1);
    cr_assert(strstr(ax_error_msg(), "nope") && strstr(ax_error_msg(), "at step 2;"), "%s",
              ax_error_msg());
    ax_error_clear();
    args[3] = data;

    /* usage: a missing step, both flags, no --ckpt */
    args[n] = "--steps", args[n + 1] = "3";
    cr_assert_eq(probe(n + 2, args), 2);
    cr_assert(strstr(ax_error_msg(), "no checkpoint step-000003"), "%s", ax_error_msg());
    args[n] = "--all-steps", args[n + 1] = "--steps", args[n + 2] = "2";
    cr_assert_eq(probe(n + 3, args), 2);
    cr_assert(strstr(ax_error_msg(), "not both"), "%s", ax_error_msg());
    ax_error_clear();
    char dir[160];
    snprintf(dir, sizeof dir, "/tmp/axmem_os_%d_scans", pid);
    ax_rm_rf(dir), ax_rm_rf(run);
    unlink(data);
}
