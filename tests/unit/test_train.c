/* `axmem train` end to end in-process: a short run on the bundled corpus lowers the loss,
 * a resumed run replays the same losses bit for bit (with no settings but --out: they come
 * from the checkpoint), early stops leave a checkpoint, and resume guards its inputs. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "data/axd.h"
#include "lib/core/fsutil.h"
#include "lib/core/json.h"
#include "lib/core/stop.h"
#include "lib/ckpt/ckpt.h"
#include "lib/model/model_io.h"
#include "train/train_run.h"
#include "tests/unit/test_train_util.h"

static void base_config(ax_train_config *c, const char *data, const char *out) {
    cr_assert_eq(ax_cfg_set_defaults(&ax_train_table, c), AX_OK);
    snprintf(c->data, sizeof c->data, "%s", data);
    snprintf(c->out, sizeof c->out, "%s", out);
    c->seq_len = 32;
    c->batch = 4;
    c->lr = 3e-3;
    c->warmup = 5;
    c->log_every = 1000;
    c->threads = 1;
}

/* reads the "loss" of every line of metrics.jsonl into l[], returns the count */
static int read_losses(const char *run, double *l, double *gn, int max) {
    char path[600];
    snprintf(path, sizeof path, "%s/metrics.jsonl", run);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s missing", path);
    char line[4096];
    int n = 0;
    while (n < max && fgets(line, sizeof line, f)) {
        ax_json *j = NULL;
        cr_assert_eq(ax_json_parse(line, strlen(line), path, &j), AX_OK);
        cr_assert_eq(ax_json_get_num(j, "loss", path, &l[n]), AX_OK);
        cr_assert_eq(ax_json_get_num(j, "grad_norm", path, &gn[n]), AX_OK);
        ax_json_free(j);
        n++;
    }
    fclose(f);
    return n;
}

/* What `axmem train --out OUT --resume` alone parses to. */
static void resume_only(ax_train_config *c, uint8_t *was_set, const char *out) {
    cr_assert_eq(ax_cfg_set_defaults(&ax_train_table, c), AX_OK);
    memset(was_set, 0, (size_t)ax_train_table.n);
    snprintf(c->out, sizeof c->out, "%s", out);
    c->resume = 1;
    tt_mark(was_set, "out");
    tt_mark(was_set, "resume");
}

/* every line of metrics.jsonl, for exact comparison of whole runs (timings cut off) */
static char *metrics_without_timing(const char *run) {
    char path[600];
    snprintf(path, sizeof path, "%s/metrics.jsonl", run);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s missing", path);
    size_t cap = 1 << 16, n = 0;
    char *all = calloc(cap, 1), line[8192];
    while (fgets(line, sizeof line, f)) {
        char *t = strstr(line, ",\"tokens\""); /* step, loss, lr, grad_norm, dropped, val */
        if (t) *t = 0;
        n += (size_t)snprintf(all + n, cap - n, "%s\n", line);
        cr_assert(n < cap);
    }
    fclose(f);
    return all;
}

static char tmp[256];
static void setup_tmp(void) {
    snprintf(tmp, sizeof tmp, "/tmp/axmem-train-test-%d", (int)getpid());
    ax_rm_rf(tmp);
    cr_assert_eq(ax_mkdir_p(tmp), AX_OK);
}
static void teardown_tmp(void) {
    ax_rm_rf(tmp);
}

TestSuite(train, .init = setup_tmp, .fini = teardown_tmp, .timeout = 120);

Test(train, short_run_lowers_loss) {
    char data[300], out[300];
    snprintf(data, sizeof data, "%s/d.axd", tmp);
    snprintf(out, sizeof out, "%s/run", tmp);
    tt_byte_dataset(data, 40, 0);
    ax_train_config c;
    base_config(&c, data, out);
    c.steps = 60;
    ax_train_result r;
    cr_assert_eq(ax_train_run(&c, NULL, &r), AX_OK, "%s", ax_error_msg());
    double l[60], g[60];
    cr_assert_eq(read_losses(out, l, g, 60), 60);
    double a = (l[0] + l[1] + l[2]) / 3, b = (l[57] + l[58] + l[59]) / 3;
    cr_assert(a - b > 1.5, "loss %.3f -> %.3f: training did not lower the loss clearly", a, b);
    char ck[400];
    snprintf(ck, sizeof ck, "%s/ckpt/step-000060/manifest.json", out);
    cr_assert(ax_path_exists(ck), "final checkpoint missing");
}

Test(train, resume_is_bit_exact) {
    char data[300], out[300], ck[400];
    snprintf(data, sizeof data, "%s/d.axd", tmp);
    snprintf(out, sizeof out, "%s/run", tmp);
    tt_byte_dataset(data, 10, 0);
    ax_train_config c;
    base_config(&c, data, out);
    c.steps = 10;
    c.ckpt_every = 4;
    ax_train_result r;
    cr_assert_eq(ax_train_run(&c, NULL, &r), AX_OK, "%s", ax_error_msg());
    double full[10], gfull[10], again[10], gagain[10];
    cr_assert_eq(read_losses(out, full, gfull, 10), 10);
    /* forget everything after step 8, as if the run had died there */
    snprintf(ck, sizeof ck, "%s/ckpt/step-000010", out);
    cr_assert_eq(ax_rm_rf(ck), AX_OK);
    ax_train_config rc;
    base_config(&rc, data, out);
    rc.steps = 10;
    rc.resume = 1;
    cr_assert_eq(ax_train_run(&rc, NULL, &r), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(r.first_step, 8);
    cr_assert_eq(read_losses(out, again, gagain, 10), 10);
    for (int i = 0; i < 10; i++) {
        cr_assert(full[i] == again[i], "step %d loss %.17g vs resumed %.17g", i + 1, full[i],
                  again[i]);
        cr_assert(gfull[i] == gagain[i], "step %d grad norm differs after resume", i + 1);
    }
}

Test(train, resume_guards) {
    char data[300], other[300], out[300], empty[300];
    snprintf(data, sizeof data, "%s/d.axd", tmp);
    snprintf(other, sizeof other, "%s/o.axd", tmp);
    snprintf(out, sizeof out, "%s/run", tmp);
    snprintf(empty, sizeof empty, "%s/none", tmp);
    tt_byte_dataset(data, 6, 0);
    tt_byte_dataset(other, 7, 0);
    ax_train_config c;
    base_config(&c, data, out);
    c.steps = 2;
    c.warmup = 1;
    ax_train_result r;
    cr_assert_eq(ax_train_run(&c, NULL, &r), AX_OK, "%s", ax_error_msg());
    /* a different dataset */
    ax_error_clear();
    uint8_t was_set[128] = {0};
    base_config(&c, other, out);
    c.steps = 4;
    c.resume = 1;
    tt_mark(was_set, "data");
    cr_assert_eq(ax_train_run(&c, was_set, &r), AX_ERR_MISMATCH);
    cr_assert(strstr(ax_error_msg(), "o.axd"), "message should name the dataset: %s",
              ax_error_msg());
    /* nothing to resume */
    ax_error_clear();
    base_config(&c, data, empty);
    c.resume = 1;
    cr_assert_neq(ax_train_run(&c, NULL, &r), AX_OK);
    cr_assert(strstr(ax_error_msg(), "none"), "message should name the folder: %s", ax_error_msg());
    /* starting over an existing run without --resume is refused */
    ax_error_clear();
    base_config(&c, data, out);
    cr_assert_eq(ax_train_run(&c, NULL, &r), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "--resume"), "%s", ax_error_msg());
}

/* A run with non-default settings everywhere, stopped early twice (a stop request before its
 * first step, then --exit-after-steps), continued each time by `--out DIR --resume` alone,
 * equals the uninterrupted run line for line: losses, learning rates, validation. */
Test(train, resume_alone_continues_exactly) {
    char data[300], val[300], full[300], part[300], ck[400];
    snprintf(data, sizeof data, "%s/d.axd", tmp);
    snprintf(val, sizeof val, "%s/v.axd", tmp);
    snprintf(full, sizeof full, "%s/full", tmp);
    snprintf(part, sizeof part, "%s/part", tmp);
    tt_byte_dataset(data, 10, 0);
    tt_byte_dataset(val, 3, 0);
    ax_train_config c;
    ax_train_result r;
    uint8_t was_set[128];
    for (int pass = 0; pass < 2; pass++) {
        base_config(&c, data, pass ? part : full);
        c.steps = 9;
        c.warmup = 3;
        c.seed = 77;
        c.layers = 1, c.dim = 32, c.heads = 2, c.ffn = 48;
        c.micro_batch = 2;
        snprintf(c.goldfish, sizeof c.goldfish, "hash:k=3,h=2");
        snprintf(c.packing, sizeof c.packing, "doc");
        snprintf(c.val_data, sizeof c.val_data, "%s", val);
        c.val_every = 2;
        c.val_batches = 2;
        c.ckpt_every = 100;
        if (pass) ax_stop_request(SIGTERM); /* as if SIGTERM came during start-up */
        cr_assert_eq(ax_train_run(&c, NULL, &r), AX_OK, "%s", ax_error_msg());
        ax_stop_clear();
    }
    cr_assert(r.interrupted && r.stop == AX_TRAIN_STOP_SIGNAL && r.stop_signal == SIGTERM);
    cr_assert_eq(r.last_step, 0);
    snprintf(ck, sizeof ck, "%s/ckpt/step-000000/manifest.json", part);
    cr_assert(ax_path_exists(ck), "a run stopped before its first step leaves step 0");
    /* 4 steps, then the rest: nothing but --out and --resume (and the chunk size) */
    resume_only(&c, was_set, part);
    c.exit_after_steps = 4;
    tt_mark(was_set, "exit-after-steps");
    cr_assert_eq(ax_train_run(&c, was_set, &r), AX_OK, "%s", ax_error_msg());
    cr_assert(r.interrupted && r.stop == AX_TRAIN_STOP_STEPS, "stop %d", (int)r.stop);
    cr_assert_eq(r.last_step, 4);
    snprintf(ck, sizeof ck, "%s/ckpt/step-000004/manifest.json", part);
    cr_assert(ax_path_exists(ck), "--exit-after-steps writes a checkpoint");
    /* the validation file moved: accepted because its checksum matches */
    char moved[300];
    snprintf(moved, sizeof moved, "%s/v-moved.axd", tmp);
    cr_assert_eq(rename(val, moved), 0);
    resume_only(&c, was_set, part);
    snprintf(c.val_data, sizeof c.val_data, "%s", moved);
    tt_mark(was_set, "val-data");
    cr_assert_eq(ax_train_run(&c, was_set, &r), AX_OK, "%s", ax_error_msg());
    cr_assert(!r.interrupted);
    cr_assert_eq(r.first_step, 4);
    cr_assert_eq(r.last_step, 9, "the run's own --steps 9, not the default");
    char *a = metrics_without_timing(full), *b = metrics_without_timing(part);
    cr_assert(strstr(a, "\"lr\""), "learning rates are compared too");
    cr_assert(strstr(a, "val_loss"), "validation ran");
    cr_assert_str_eq(a, b, "resumed run differs from the uninterrupted one");
    free(a), free(b);
}

/* Flags on a resumed run: safe ones override, a moved dataset with the same contents is
 * accepted, --steps changes the schedule, anything else is an error naming the flag. */
Test(train, resume_overrides) {
    char data[300], moved[300], out[300];
    snprintf(data, sizeof data, "%s/d.axd", tmp);
    snprintf(moved, sizeof moved, "%s/moved.axd", tmp);
    snprintf(out, sizeof out, "%s/run", tmp);
    tt_byte_dataset(data, 6, 0);
    ax_train_config c;
    ax_train_result r;
    uint8_t was_set[128];
    base_config(&c, data, out);
    c.steps = 3;
    c.warmup = 1;
    cr_assert_eq(ax_train_run(&c, NULL, &r), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(rename(data, moved), 0);
    /* the recorded path is gone: the message says how to point at the moved file */
    resume_only(&c, was_set, out);
    cr_assert_neq(ax_train_run(&c, was_set, &r), AX_OK);
    cr_assert(strstr(ax_error_msg(), "--data NEW_PATH"), "%s", ax_error_msg());
    /* a FIXED setting */
    ax_error_clear();
    resume_only(&c, was_set, out);
    snprintf(c.data, sizeof c.data, "%s", moved);
    tt_mark(was_set, "data");
    c.seq_len = 16;
    tt_mark(was_set, "seq-len");
    cr_assert_eq(ax_train_run(&c, was_set, &r), AX_ERR_MISMATCH);
    cr_assert(strstr(ax_error_msg(), "--seq-len"), "%s", ax_error_msg());
    /* a validation set the run never had */
    ax_error_clear();
    resume_only(&c, was_set, out);
    snprintf(c.data, sizeof c.data, "%s", moved);
    tt_mark(was_set, "data");
    snprintf(c.val_data, sizeof c.val_data, "%s", moved);
    tt_mark(was_set, "val-data");
    cr_assert_eq(ax_train_run(&c, was_set, &r), AX_ERR_MISMATCH);
    cr_assert(strstr(ax_error_msg(), "no validation set"), "%s", ax_error_msg());
    /* moved data, more steps, other log cadence: fine */
    ax_error_clear();
    resume_only(&c, was_set, out);
    snprintf(c.data, sizeof c.data, "%s", moved);
    tt_mark(was_set, "data");
    c.steps = 5;
    tt_mark(was_set, "steps");
    c.log_every = 1;
    tt_mark(was_set, "log-every");
    cr_assert_eq(ax_train_run(&c, was_set, &r), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(r.first_step, 3);
    cr_assert_eq(r.last_step, 5);
    /* and the new length stays: resuming again with nothing is already done */
    resume_only(&c, was_set, out);
    snprintf(c.data, sizeof c.data, "%s", moved);
    tt_mark(was_set, "data");
    cr_assert_eq(ax_train_run(&c, was_set, &r), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(r.last_step, 5);
    cr_assert_eq(r.first_step, 5);
}

/* The RMSNorm epsilon is part of the model: it is stored in the manifest, read back by
 * loaders and by --resume, and a manifest from before it was stored means 1e-5. */
Test(train, norm_eps_is_stored_and_read_back) {
    char data[300], out[300], ckdir[320], step_dir[700];
    snprintf(data, sizeof data, "%s/d.axd", tmp);
    snprintf(out, sizeof out, "%s/run", tmp);
    snprintf(ckdir, sizeof ckdir, "%s/ckpt", out);
    tt_byte_dataset(data, 6, 0);
    ax_train_config c;
    ax_train_result r;
    uint8_t was_set[128];
    base_config(&c, data, out);
    cr_assert_eq(c.norm_eps, 1e-5);
    cr_assert_eq(ax_train_model_config(&c).norm_eps, 1e-5f);
    c.steps = 2;
    c.warmup = 1;
    c.norm_eps = 1e-3;
    cr_assert_eq(ax_train_run(&c, NULL, &r), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(ax_ckpt_find_latest(ckdir, step_dir, sizeof step_dir), AX_OK, "%s",
                 ax_error_msg());
    ax_ckpt_t *ck = NULL;
    cr_assert_eq(ax_ckpt_open(step_dir, &ck), AX_OK, "%s", ax_error_msg());
    ax_model_config mc;
    cr_assert_eq(ax_model_config_from_ckpt(ck, &mc), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(mc.norm_eps, 1e-3f);
    /* --resume takes it from the manifest; a different value is an error naming the flag */
    resume_only(&c, was_set, out);
    cr_assert_eq(ax_train_merge_resumed(&c, was_set, ax_ckpt_config(ck), step_dir, 2), AX_OK, "%s",
                 ax_error_msg());
    cr_assert_eq(c.norm_eps, 1e-3);
    ax_error_clear();
    resume_only(&c, was_set, out);
    c.norm_eps = 1e-6;
    tt_mark(was_set, "norm-eps");
    cr_assert_eq(ax_train_merge_resumed(&c, was_set, ax_ckpt_config(ck), step_dir, 2),
                 AX_ERR_MISMATCH);
    cr_assert(strstr(ax_error_msg(), "--norm-eps"), "%s", ax_error_msg());
    ax_error_clear();
    ax_ckpt_free(ck);

    /* a manifest written before norm-eps was stored: 1e-5, whatever this command's default */
    const char *old_cfg = "{\"layers\":2,\"dim\":16,\"heads\":2,\"ffn\":32,\"vocab\":300,"
                          "\"tie-embeddings\":true,\"rope-theta\":10000}";
    float blob[4] = {0};
    ax_ckpt_blob blobs[1] = {{"params", blob, 4}};
    ax_ckpt_write_args a = {.config_json = old_cfg, .blobs = blobs, .n_blobs = 1};
    char old_dir[320];
    snprintf(old_dir, sizeof old_dir, "%s/old", tmp);
    cr_assert_eq(ax_ckpt_write(old_dir, 7, &a), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(ax_ckpt_find_latest(old_dir, step_dir, sizeof step_dir), AX_OK, "%s",
                 ax_error_msg());
    cr_assert_eq(ax_ckpt_open(step_dir, &ck), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(ax_model_config_from_ckpt(ck, &mc), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(mc.norm_eps, 1e-5f);
    ax_train_config o;
    cr_assert_eq(ax_cfg_set_defaults(&ax_train_table, &o), AX_OK);
    o.norm_eps = 0.5; /* not marked as set: the manifest (its absence) decides */
    memset(was_set, 0, (size_t)ax_train_table.n);
    cr_assert_eq(ax_train_merge_resumed(&o, was_set, ax_ckpt_config(ck), step_dir, 7), AX_OK, "%s",
                 ax_error_msg());
    cr_assert_eq(o.norm_eps, 1e-5);
    ax_ckpt_free(ck);

    /* a damaged value is an error, not a model with another epsilon */
    const char *bad_cfg = "{\"layers\":2,\"dim\":16,\"heads\":2,\"ffn\":32,\"vocab\":300,"
                          "\"tie-embeddings\":true,\"rope-theta\":10000,\"norm-eps\":-1}";
    a.config_json = bad_cfg;
    cr_assert_eq(ax_ckpt_write(old_dir, 8, &a), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(ax_ckpt_find_latest(old_dir, step_dir, sizeof step_dir), AX_OK, "%s",
                 ax_error_msg());
    cr_assert_eq(ax_ckpt_open(step_dir, &ck), AX_OK, "%s", ax_error_msg());
    ax_error_clear();
    cr_assert_eq(ax_model_config_from_ckpt(ck, &mc), AX_ERR_CORRUPT);
    cr_assert(strstr(ax_error_msg(), "norm-eps"), "%s", ax_error_msg());
    ax_ckpt_free(ck);
}

/* A message left by an earlier failure in this thread is not reported as the next command's:
 * each command entry point starts with a clear message (lib/core/status.h). */
Test(train, stale_message_is_not_reported) {
    char errf[300];
    snprintf(errf, sizeof errf, "%s/stderr.txt", tmp);
    (void)ax_errorf(AX_ERR_IO, "stale message from an earlier command");
    char *argv[] = {"train", "--steps", "abc", NULL};
    fflush(stderr);
    int saved = dup(2), fd = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert(saved >= 0 && fd >= 0);
    dup2(fd, 2);
    int rc = ax_cmd_train(3, argv);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    close(fd);
    cr_assert_eq(rc, 2);
    char *got = NULL;
    size_t n = 0;
    cr_assert_eq(ax_read_file(errf, &got, &n), AX_OK, "%s", ax_error_msg());
    cr_assert(strstr(got, "--steps=abc is not an integer"), "%s", got);
    cr_assert(!strstr(got, "stale message"), "%s", got);
    free(got);
    ax_error_clear();
}

/* --init: unspecified shape flags come from the checkpoint (its float texts kept), a set flag
 * that agrees is accepted, one that disagrees (or --model) is an error naming both values. */
Test(train, init_shape_comes_from_the_checkpoint) {
    static const char js[] = "{\"layers\":1,\"dim\":32,\"heads\":4,\"ffn\":96,\"vocab\":420,"
                             "\"tie-embeddings\":false,\"rope-theta\":5150,\"norm-eps\":1e-6}";
    ax_json *j = NULL;
    cr_assert_eq(ax_json_parse(js, strlen(js), "test", &j), AX_OK);
    ax_model_config shape = {.n_layers = 1,
                             .dim = 32,
                             .n_heads = 4,
                             .ffn = 96,
                             .vocab = 420,
                             .rope_theta = 5150.0f,
                             .norm_eps = 1e-6f};
    uint8_t *was = calloc((size_t)ax_train_table.n, 1);
    cr_assert_not_null(was);
    ax_train_config c;
    cr_assert_eq(ax_cfg_set_defaults(&ax_train_table, &c), AX_OK);
    cr_assert_eq(ax_train_shape_from_init(&c, was, &shape, j, "ck/step-000000"), AX_OK, "%s",
                 ax_error_msg());
    cr_assert(c.layers == 1 && c.dim == 32 && c.heads == 4 && c.ffn == 96 && c.vocab == 420);
    cr_assert(!c.tie_embeddings && c.rope_theta == 5150.0 && c.norm_eps == 1e-6);
    was[ax_cfg_find(&ax_train_table, "dim") - ax_train_table.entries] = 1; /* --dim 32: agrees */
    cr_assert_eq(ax_train_shape_from_init(&c, was, &shape, j, "ck/step-000000"), AX_OK);
    c.dim = 64; /* --dim 64: disagrees */
    cr_assert_eq(ax_train_shape_from_init(&c, was, &shape, j, "ck/step-000000"), AX_ERR_MISMATCH);
    cr_assert(strstr(ax_error_msg(), "--dim 64 differs from 32 in --init ck/step-000000"), "%s",
              ax_error_msg());
    ax_error_clear();
    c.dim = 32;
    was[ax_cfg_find(&ax_train_table, "norm-eps") - ax_train_table.entries] = 1;
    c.norm_eps = 1e-5;
    cr_assert_eq(ax_train_shape_from_init(&c, was, &shape, j, "ck/step-000000"), AX_ERR_MISMATCH);
    cr_assert(strstr(ax_error_msg(), "--norm-eps 1e-05 differs from 1e-06"), "%s", ax_error_msg());
    ax_error_clear();
    free(was);
    ax_json_free(j);
}
