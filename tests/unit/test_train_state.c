/* What a run continues from and what it leaves: a resume refuses a manifest whose training
 * state is impossible (naming the field), a checkpoint with non-finite or impossible values is
 * refused by resume, scans and export, a run that diverges stops with an error and writes
 * nothing from the non-finite state, and one run at a time holds an --out folder. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "data/axd.h"
#include "interop/hf_model.h"
#include "lib/core/fsutil.h"
#include "lib/core/json.h"
#include "lib/model/model.h"
#include "lib/model/optim.h"
#include "memscan/model_load.h"
#include "test_ckpt_poison.h"
#include "train/run_lock.h"
#include "train/train_run.h"
#include "tests/unit/test_train_util.h"

static char tmp[256];

static void setup_tmp(void) {
    snprintf(tmp, sizeof tmp, "/tmp/axmem-train-state-%d", (int)getpid());
    ax_rm_rf(tmp);
    cr_assert_eq(ax_mkdir_p(tmp), AX_OK);
    ax_error_clear();
}
static void teardown_tmp(void) {
    ax_rm_rf(tmp);
}

static void small_run(ax_train_config *c, const char *data, const char *out) {
    cr_assert_eq(ax_cfg_set_defaults(&ax_train_table, c), AX_OK);
    snprintf(c->data, sizeof c->data, "%s", data);
    snprintf(c->out, sizeof c->out, "%s", out);
    c->layers = 1, c->dim = 32, c->heads = 2, c->ffn = 48;
    c->seq_len = 16;
    c->batch = 4;
    c->warmup = 1;
    c->log_every = 1000;
    c->threads = 1;
}

/* what `axmem train --out OUT --resume` parses to */
static void resume_only(ax_train_config *c, const char *out) {
    cr_assert_eq(ax_cfg_set_defaults(&ax_train_table, c), AX_OK);
    snprintf(c->out, sizeof c->out, "%s", out);
    c->resume = 1;
}

static void expect_msg(const char *a, const char *b) {
    const char *m = ax_error_msg();
    cr_assert(strstr(m, a), "want \"%s\" in: %s", a, m);
    if (b) cr_assert(strstr(m, b), "want \"%s\" in: %s", b, m);
}

static char *read_text(const char *path) {
    char *t = NULL;
    size_t n = 0;
    cr_assert_eq(ax_read_file(path, &t, &n), AX_OK, "%s", ax_error_msg());
    return t;
}

static void write_text(const char *path, const char *text) {
    cr_assert_eq(ax_write_file(path, text, strlen(text)), AX_OK, "%s", ax_error_msg());
}

/* the manifest text with the value after `key` (its first occurrence) replaced */
static char *with_value(const char *text, const char *key, const char *value) {
    char *copy = strdup(text);
    return poison_replace_after(copy, copy, key, value);
}

/* the manifest text with the first `from` replaced by `to` */
static char *with_text(const char *text, const char *from, const char *to) {
    const char *at = strstr(text, from);
    cr_assert_not_null(at, "%s not in the manifest", from);
    size_t pre = (size_t)(at - text), n = strlen(text) + strlen(to) + 1;
    char *out = malloc(n);
    memcpy(out, text, pre);
    snprintf(out + pre, n - pre, "%s%s", to, at + strlen(from));
    return out;
}

TestSuite(train_state, .init = setup_tmp, .fini = teardown_tmp, .timeout = 120);

/* Every field of the training state a resume reads is checked against the others: an edited
 * manifest is refused with a message naming the manifest and the field, and the untouched
 * manifest resumes. */
Test(train_state, resume_refuses_impossible_state) {
    char data[300], out[300], mpath[400];
    snprintf(data, sizeof data, "%s/d.axd", tmp);
    snprintf(out, sizeof out, "%s/run", tmp);
    snprintf(mpath, sizeof mpath, "%s/ckpt/step-000004/manifest.json", out);
    tt_byte_dataset(data, 6, 0);
    ax_train_config c;
    ax_train_result r;
    small_run(&c, data, out);
    c.steps = 4;
    cr_assert_eq(ax_train_run(&c, NULL, &r), AX_OK, "%s", ax_error_msg());
    char *good = read_text(mpath);
    struct {
        const char *key, *value; /* value NULL: rename the key (the field goes missing) */
        const char *want;
    } cases[] = {
        {"\"optim_t\":", "-5", "state \"optim_t\" is -5, but AdamW takes one update per"},
        {"\"optim_t\":", "2", "state \"optim_t\" is 2"},
        {"\"optim_t\":", "4.5", "state \"optim_t\" is 4.5, not an integer"},
        {"\"optim_t\":", "\"4\"", "state \"optim_t\" is a string"},
        {"\"optim_t\":", NULL, "state \"optim_t\" is missing"},
        {"\"step\":4,\"optim_t\"", NULL, "state \"step\" is missing"},
        {"\"dataset_tokens\":", "5", "state \"dataset_tokens\" is 5"},
        {"\"dataset_tokens\":", "-1", "state \"dataset_tokens\" is -1"},
        {"\"dataset_xxh3\":", "12", "state \"dataset_xxh3\" is a number"},
        {"\"lr\":", NULL, "config \"lr\" is missing"},
        {"\"lr\":", "-1", "--lr=-1 is out of range"},
        {"\"lr\":", "1e999", "invalid JSON"},
        {"\"steps\":", "3", "config \"steps\" is 3, but the manifest is of step 4"},
        {"\"seq-len\":", "1e300", "--seq-len"},
        {"\"grid\":", "\"1x1\"", "the \"grid\" is \"1x1\""},
        {"\"dataset_tokens\"", NULL, "state \"dataset_tokens\" is missing"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *bad;
        if (!cases[i].value) { /* a renamed key is a missing field */
            char renamed[64];
            snprintf(renamed, sizeof renamed, "\"x%s", cases[i].key + 1);
            bad = with_text(good, cases[i].key, renamed);
        } else {
            bad = with_value(good, cases[i].key, cases[i].value);
        }
        write_text(mpath, bad);
        free(bad);
        ax_error_clear();
        resume_only(&c, out);
        c.steps = 6;
        ax_status st = ax_train_run(&c, NULL, &r);
        cr_assert_neq(st, AX_OK, "case %zu (%s %s) was accepted", i, cases[i].key,
                      cases[i].value ? cases[i].value : "missing");
        expect_msg(cases[i].want, "step-000004");
    }
    /* step of 9e15 in step-000004/: the folder says otherwise */
    char *bad =
        with_text(good, "\"version\":1,\"step\":4", "\"version\":1,\"step\":9000000000000000");
    write_text(mpath, bad);
    free(bad);
    ax_error_clear();
    resume_only(&c, out);
    cr_assert_eq(ax_train_run(&c, NULL, &r), AX_ERR_CORRUPT);
    expect_msg("\"step\" is 9000000000000000 but the folder is step-000004", NULL);
    /* an init_ckpt without the config's init: not a run that was fine-tuned */
    bad = with_text(good, "\"dataset_tokens\"",
                    "\"init_ckpt\":\"x/step-000000\",\"init_xxh3\":"
                    "\"0x1\",\"dataset_tokens\"");
    write_text(mpath, bad);
    free(bad);
    ax_error_clear();
    resume_only(&c, out);
    cr_assert_eq(ax_train_run(&c, NULL, &r), AX_ERR_CORRUPT);
    expect_msg("state \"init_ckpt\" is there, but the config's \"init\" says", NULL);
    /* the manifest as written resumes, with --steps 6 */
    write_text(mpath, good);
    free(good);
    ax_error_clear();
    resume_only(&c, out);
    c.steps = 6;
    uint8_t *was_set = calloc((size_t)ax_train_table.n, 1);
    was_set[ax_cfg_find(&ax_train_table, "steps") - ax_train_table.entries] = 1;
    cr_assert_eq(ax_train_run(&c, was_set, &r), AX_OK, "%s", ax_error_msg());
    free(was_set);
    cr_assert_eq(r.first_step, 4);
    cr_assert_eq(r.last_step, 6);
}

/* A run that diverges (here AdamW with eps 0 and beta2 0 divides by zero) stops at the step
 * whose loss or gradient norm, or whose weights as its checkpoint is written, are not finite,
 * with an error naming it and the newest checkpoint, and writes nothing from that state. Both
 * ways are taken: with a checkpoint every step the weights are caught first, without any the
 * next step's loss. */
Test(train_state, diverged_run_stops_without_writing) {
    char data[300], out[300], path[400];
    snprintf(data, sizeof data, "%s/d.axd", tmp);
    snprintf(out, sizeof out, "%s/run", tmp);
    tt_byte_dataset(data, 6, 0);
    ax_train_config c;
    ax_train_result r;
    small_run(&c, data, out);
    c.steps = 20;
    c.lr = 10, c.grad_clip = 0, c.warmup = 0, c.beta2 = 0, c.eps = 0, c.weight_decay = 0;
    for (int every = 1; every >= 0; every--) {
        c.ckpt_every = every;
        ax_rm_rf(out);
        ax_error_clear();
        ax_status st = ax_train_run(&c, NULL, &r);
        cr_assert_eq(st, AX_ERR_CORRUPT, "a diverging run ended with %d: %s", st, ax_error_msg());
        long step = 0;
        const char *m = strstr(ax_error_msg(), "step ");
        cr_assert(m && sscanf(m, "step %ld: training diverged", &step) == 1, "%s", ax_error_msg());
        cr_assert(step >= 1 && step <= 20);
        /* nothing at or after the diverged step; every earlier checkpoint is finite and readable */
        snprintf(path, sizeof path, "%s/ckpt/step-%06ld", out, step);
        cr_assert(!ax_path_exists(path), "%s was written from a non-finite state", path);
        if (every && step > 1) {
            snprintf(path, sizeof path, "%s/ckpt/step-%06ld", out, step - 1);
            expect_msg(path, "is from before it");
        } else {
            expect_msg("this run has written no checkpoint", NULL);
        }
        snprintf(path, sizeof path, "%s/metrics.jsonl", out);
        char *text = read_text(path);
        int lines = 0;
        for (char *p = text; *p; p++) lines += *p == '\n';
        /* the diverged step's line is there only when its loss was finite (the weights after it
         * were not, found as its checkpoint was written) */
        cr_assert(lines == step - 1 ||
                      (lines == step && strstr(ax_error_msg(), "refusing to write")),
                  "metrics.jsonl has %d lines; the run diverged at step %ld", lines, step);
        cr_assert(!strstr(text, "nan") && !strstr(text, "inf"), "%s", text);
        free(text);
    }
}

/* step_dir becomes a fresh copy of the checkpoint kept at `keep` */
static void restore(const char *keep, const char *step_dir) {
    char cmd[1000];
    ax_rm_rf(step_dir);
    snprintf(cmd, sizeof cmd, "cp -r '%s' '%s'", keep, step_dir);
    cr_assert_eq(system(cmd), 0);
}

/* Moments and parameters are checked as they are loaded: a NaN (checksums intact) stops a
 * resume, a scan and an export, naming the checkpoint and the tensor; a negative second moment
 * stops a resume. */
Test(train_state, non_finite_checkpoint_is_refused_everywhere) {
    char data[300], out[300], step_dir[400], keep[400], hf[400];
    snprintf(data, sizeof data, "%s/d.axd", tmp);
    snprintf(out, sizeof out, "%s/run", tmp);
    snprintf(step_dir, sizeof step_dir, "%s/ckpt/step-000002", out);
    snprintf(keep, sizeof keep, "%s/keep", tmp);
    snprintf(hf, sizeof hf, "%s/hf", tmp);
    tt_byte_dataset(data, 6, 0);
    ax_train_config c;
    ax_train_result r;
    small_run(&c, data, out);
    c.steps = 2;
    cr_assert_eq(ax_train_run(&c, NULL, &r), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(rename(step_dir, keep), 0);
    /* adam_v: NaN, then a negative value */
    float bad_v[2] = {NAN, -1.0f};
    const char *want[2] = {"blob \"adam_v\" holds 1 non-finite value", "never negative"};
    for (int k = 0; k < 2; k++) {
        restore(keep, step_dir);
        poison_shard(step_dir, "adam_v.000.zst", 7, bad_v[k]);
        ax_error_clear();
        resume_only(&c, out);
        c.steps = 3;
        cr_assert_eq(ax_train_run(&c, NULL, &r), AX_ERR_CORRUPT);
        expect_msg(want[k], "tensor wte");
    }
    /* params: resume, a scan's model and export all refuse */
    restore(keep, step_dir);
    poison_shard(step_dir, "params.000.zst", 40, INFINITY);
    ax_error_clear();
    resume_only(&c, out);
    c.steps = 3;
    cr_assert_eq(ax_train_run(&c, NULL, &r), AX_ERR_CORRUPT);
    expect_msg("blob \"params\" holds 1 non-finite value (the first is inf", "tensor wte");
    ax_error_clear();
    ax_ms_model mm;
    cr_assert_eq(ax_ms_model_open(out, "1x1x1x1", "cpu", 4, 16, &mm), AX_ERR_CORRUPT);
    expect_msg(step_dir, "tensor wte (its value 40)");
    ax_error_clear();
    cr_assert_neq(ax_hf_export(step_dir, hf, NULL, 0), AX_OK);
    expect_msg(step_dir, "non-finite");
    cr_assert(!ax_path_exists(hf) || !ax_path_exists(strcat(hf, "/model.safetensors")));
    ax_error_clear();
}

/* A gradient with a NaN or an infinity in it updates nothing: parameters, moments and the
 * update count stay as they were, and the norm says why (the caller stops the run). */
Test(train_state, optimizer_applies_no_update_from_a_non_finite_gradient) {
    ax_model_config mc = {.n_layers = 1,
                          .dim = 16,
                          .n_heads = 2,
                          .ffn = 24,
                          .vocab = 260,
                          .tie_embeddings = 1,
                          .rope_theta = 10000.0f,
                          .norm_eps = 1e-5f};
    ax_model_t *m = NULL;
    ax_optim_t *o = NULL;
    cr_assert_eq(ax_model_create(&mc, 1, 8, &m), AX_OK, "%s", ax_error_msg());
    ax_model_init(m, 3);
    ax_adamw_config oc = {0.9f, 0.95f, 1e-8f, 0.1f, 1.0f};
    cr_assert_eq(ax_optim_create(m, &oc, &o), AX_OK, "%s", ax_error_msg());
    int64_t n = ax_model_n_params(m);
    float *p = malloc((size_t)n * sizeof *p), *after = malloc((size_t)n * sizeof *after);
    cr_assert_eq(ax_model_read_params(m, p, 0, n), AX_OK);
    p[5 * mc.dim] = INFINITY; /* token 5's embedding: its forward and every gradient go NaN */
    cr_assert_eq(ax_model_write_params(m, p, 0, n), AX_OK);
    int32_t in[8] = {5, 1, 2, 3, 4, 6, 7, 8}, tg[8] = {1, 2, 3, 4, 6, 7, 8, 9};
    uint8_t mask[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    ax_model_zero_grad(m);
    ax_model_forward(m, in, tg, mask, 1, 1.0f / 8, 1);
    ax_model_backward(m);
    double gnorm = 0;
    cr_assert_eq(ax_optim_step(o, m, 1e-2, &gnorm), AX_OK, "%s", ax_error_msg());
    cr_assert(!isfinite(gnorm), "gradient norm %g", gnorm);
    cr_assert_eq(ax_optim_t_steps(o), 0);
    cr_assert_eq(ax_model_read_params(m, after, 0, n), AX_OK);
    cr_assert(memcmp(p, after, (size_t)n * sizeof *p) == 0, "parameters changed");
    cr_assert_eq(ax_optim_read_m(o, after, 0, n), AX_OK);
    for (int64_t i = 0; i < n; i++)
        cr_assert(after[i] == 0.0f, "moment m[%lld] changed", (long long)i);
    free(p), free(after);
    ax_optim_free(o);
    ax_model_free(m);
}

/* ---- one run per --out folder */

static void own_host(char *h, size_t n) {
    cr_assert_eq(gethostname(h, n), 0);
}

/* a PID that is certainly not running: a child that has exited and been reaped */
static long dead_pid(void) {
    pid_t p = fork();
    cr_assert(p >= 0);
    if (p == 0) _exit(0);
    waitpid(p, NULL, 0);
    return (long)p;
}

/* While a run holds the folder, a second is refused naming it (host, PID, since); once the
 * holder is gone the lock file is gone too and the folder can be used. */
Test(train_state, second_run_into_the_folder_is_refused) {
    char data[300], out[300], lockf[400];
    snprintf(data, sizeof data, "%s/d.axd", tmp);
    snprintf(out, sizeof out, "%s/run", tmp);
    snprintf(lockf, sizeof lockf, "%s/.lock", out);
    tt_byte_dataset(data, 6, 0);
    ax_run_lock *held = NULL;
    cr_assert_eq(ax_run_lock_take(out, 1, &held), AX_OK, "%s", ax_error_msg());
    cr_assert(ax_path_exists(lockf));
    char host[256], want[300];
    own_host(host, sizeof host);
    snprintf(want, sizeof want, "PID %ld on host %s has held it since", (long)getpid(), host);
    ax_train_config c;
    ax_train_result r;
    small_run(&c, data, out);
    c.steps = 2;
    cr_assert_eq(ax_train_run(&c, NULL, &r), AX_ERR_IO);
    expect_msg("--out", want);
    cr_assert(!ax_path_exists(strcat(strcpy(want, out), "/metrics.jsonl")), "it wrote anyway");
    /* --resume takes the lock too */
    ax_error_clear();
    resume_only(&c, out);
    cr_assert_eq(ax_train_run(&c, NULL, &r), AX_ERR_IO);
    expect_msg("is in use", NULL);
    ax_run_lock_release(held);
    cr_assert(!ax_path_exists(lockf));
    ax_error_clear();
    small_run(&c, data, out);
    c.steps = 2;
    cr_assert_eq(ax_train_run(&c, NULL, &r), AX_OK, "%s", ax_error_msg());
    cr_assert(!ax_path_exists(lockf), "the run left its lock behind");
}

/* A record left by a process that is gone (killed with SIGKILL, say) is taken over: its PID
 * is not running, or the PID now belongs to a process that started at another time. */
Test(train_state, stale_lock_is_taken_over) {
    char dir[300], lockf[400], host[256], rec[1200];
    snprintf(dir, sizeof dir, "%s/run", tmp);
    snprintf(lockf, sizeof lockf, "%s/.lock", dir);
    cr_assert_eq(ax_mkdir_p(dir), AX_OK);
    own_host(host, sizeof host);
    long pids[2] = {dead_pid(), (long)getpid()};
    for (int k = 0; k < 2; k++) {
        /* this process with another start time: the PID was reused */
        snprintf(rec, sizeof rec,
                 "{\"lock\":\"axmem train\",\"host\":\"%s\",\"pid\":%ld,\"proc_start\":1,"
                 "\"since\":\"earlier\",\"command\":\"axmem train --out %s\"}",
                 host, pids[k], dir);
        write_text(lockf, rec);
        ax_run_lock *l = NULL;
        cr_assert_eq(ax_run_lock_take(dir, 0, &l), AX_OK, "case %d: %s", k, ax_error_msg());
        char *now = read_text(lockf);
        char mine[64];
        snprintf(mine, sizeof mine, "\"pid\":%ld,", (long)getpid());
        cr_assert(strstr(now, mine) && !strstr(now, "earlier"), "%s", now);
        free(now);
        ax_run_lock_release(l);
        cr_assert(!ax_path_exists(lockf));
    }
}

/* A record from another host is never broken (its process cannot be checked from here), nor
 * one that is not a lock record: the message says how to remove it. An empty file (a holder
 * that died before writing its record) is taken. */
Test(train_state, foreign_or_damaged_lock_is_kept) {
    char dir[300], lockf[400], rec[600];
    snprintf(dir, sizeof dir, "%s/run", tmp);
    snprintf(lockf, sizeof lockf, "%s/.lock", dir);
    cr_assert_eq(ax_mkdir_p(dir), AX_OK);
    snprintf(rec, sizeof rec,
             "{\"lock\":\"axmem train\",\"host\":\"elsewhere.example\",\"pid\":%ld,"
             "\"since\":\"2026-01-02 03:04:05 UTC\",\"command\":\"axmem train --out x\"}",
             dead_pid());
    write_text(lockf, rec);
    ax_run_lock *l = NULL;
    cr_assert_eq(ax_run_lock_take(dir, 0, &l), AX_ERR_IO);
    expect_msg("on host elsewhere.example since 2026-01-02 03:04:05 UTC", "remove");
    expect_msg(lockf, NULL);
    char *now = read_text(lockf);
    cr_assert_str_eq(now, rec, "the other host's record was changed");
    free(now);
    write_text(lockf, "not a lock");
    ax_error_clear();
    cr_assert_eq(ax_run_lock_take(dir, 0, &l), AX_ERR_IO);
    expect_msg("is not an axmem lock record", "remove");
    write_text(lockf, "");
    ax_error_clear();
    cr_assert_eq(ax_run_lock_take(dir, 0, &l), AX_OK, "%s", ax_error_msg());
    ax_run_lock_release(l);
    /* a run that fails before it writes anything leaves no folder it created */
    char fresh[320], top[300];
    snprintf(top, sizeof top, "%s/new", tmp);
    snprintf(fresh, sizeof fresh, "%s/a/b/", top);
    cr_assert_eq(ax_run_lock_take(fresh, 1, &l), AX_OK, "%s", ax_error_msg());
    cr_assert(ax_path_exists(fresh));
    ax_run_lock_release(l);
    cr_assert(!ax_path_exists(top), "the folders it made are left");
    cr_assert(ax_path_exists(tmp));
}
