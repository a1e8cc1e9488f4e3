/* `axmem train` end to end in-process: a short run on the bundled corpus lowers the loss,
 * a resumed run replays the same losses bit for bit, and resume guards its inputs. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/axd.h"
#include "lib/fsutil.h"
#include "lib/json.h"
#include "train/train.h"

/* Byte-level dataset (vocab 257: bytes + EOT) from the first documents of the corpus, so
 * the test needs no trained tokenizer. */
static void make_dataset(const char *path, int n_docs) {
    FILE *f = fopen("data/corpus/kjv.jsonl", "r");
    cr_assert_not_null(f, "run the tests from the repository root");
    ax_axd_writer_t *w = NULL;
    cr_assert_eq(ax_axd_writer_create(path, 257, &w), AX_OK, "%s", ax_error_msg());
    char *line = NULL;
    size_t cap = 0;
    for (int d = 0; d < n_docs && getline(&line, &cap, f) > 0; d++) {
        ax_json *j = NULL;
        cr_assert_eq(ax_json_parse(line, strlen(line), "kjv.jsonl", &j), AX_OK);
        const char *text = NULL;
        cr_assert_eq(ax_json_get_str(j, "text", "kjv.jsonl", &text), AX_OK);
        size_t n = strlen(text);
        int32_t *toks = malloc(n * sizeof *toks);
        for (size_t i = 0; i < n; i++) toks[i] = (uint8_t)text[i];
        cr_assert_eq(ax_axd_writer_add_doc(w, toks, n), AX_OK);
        free(toks);
        ax_json_free(j);
    }
    free(line);
    fclose(f);
    cr_assert_eq(ax_axd_writer_close(w), AX_OK, "%s", ax_error_msg());
}

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
    make_dataset(data, 40);
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
    make_dataset(data, 10);
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
    make_dataset(data, 6);
    make_dataset(other, 7);
    ax_train_config c;
    base_config(&c, data, out);
    c.steps = 2;
    c.warmup = 1;
    ax_train_result r;
    cr_assert_eq(ax_train_run(&c, NULL, &r), AX_OK, "%s", ax_error_msg());
    /* a different dataset */
    ax_error_clear();
    base_config(&c, other, out);
    c.steps = 4;
    c.resume = 1;
    cr_assert_eq(ax_train_run(&c, NULL, &r), AX_ERR_MISMATCH);
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
