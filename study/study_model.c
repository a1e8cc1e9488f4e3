/* One mitigation's model: its training run (the same settings for every mitigation but the
 * mitigation itself) and the four scans, each with the commands' defaults and the settings
 * below, writing into the run folder as the commands would. */
#include "data/axd.h"
#include "lib/core/log.h"
#include "memscan/exposure_run.h"
#include "memscan/generate_run.h"
#include "memscan/mia_run.h"
#include "memscan/probe_run.h"
#include "study/study_mitigate.h"
#include "study/study_run.h"
#include "train/train_run.h"

#include <stdio.h>

ax_status ax_study_train(const ax_study_config *c, const ax_mitigation *m, const char *data,
                         const char *val, const char *tok, const char *run, int resume) {
    ax_train_config t;
    AX_CHECK(ax_cfg_set_defaults(&ax_train_table, &t));
    /* strings through the table: a path too long for the field is an error naming it */
    const char *text[][2] = {
        {"data", data},      {"val-data", val},  {"tokenizer", tok},       {"out", run},
        {"model", c->model}, {"packing", "doc"}, {"goldfish", m->goldfish}};
    for (size_t i = 0; i < sizeof text / sizeof text[0]; i++)
        AX_CHECK(ax_cfg_set(&ax_train_table, &t, text[i][0], text[i][1], NULL));
    t.seq_len = c->seq_len;
    t.batch = c->batch;
    t.steps = c->steps;
    t.lr = c->lr;
    t.seed = c->seed;
    t.warmup = c->steps < 20 ? c->steps : 20; /* a short run (--steps 5) runs too */
    t.weight_decay = 0;
    t.val_batches = 2;
    t.log_every = 50;
    t.resume = resume;
    if (m->kind == AX_MIT_DP) {
        ax_axd_t *d;
        AX_CHECK(ax_axd_open(data, AX_AXD_VERIFY, &d));
        uint64_t n = ax_axd_n_docs(d);
        ax_axd_free(d);
        AX_CHECK(ax_study_dp_config(&t, m, n));
    }
    ax_train_result r;
    AX_CHECK(ax_train_run(&t, NULL, &r));
    if (r.interrupted)
        return ax_errorf(AX_ERR_INTERRUPTED,
                         "training %s stopped at step %ld (checkpoint written); run the same "
                         "command again to continue",
                         run, r.last_step);
    AX_INFO("done: step %ld, loss %.4f; metrics in %s/metrics.jsonl", r.last_step, r.final_loss,
            run);
    return AX_OK;
}

/* a 32-token prefix of each training document, its greedy 32-token continuation */
ax_status ax_study_probe(const char *run, const char *data, const char *tok, int64_t samples,
                         int deduped) {
    ax_ms_probe_opts o;
    AX_CHECK(ax_cfg_set_defaults(&ax_ms_probe_table, &o));
    char out[1100];
    snprintf(out, sizeof out, "%s/probe.json", run); /* samples: probe.samples.jsonl */
    const char *text[][2] = {{"ckpt", run}, {"data", data}, {"tokenizer", tok}, {"out", out}};
    for (size_t i = 0; i < sizeof text / sizeof text[0]; i++)
        AX_CHECK(ax_cfg_set(&ax_ms_probe_table, &o, text[i][0], text[i][1], NULL));
    o.samples = samples;
    o.not_training_data = deduped;
    o.prefix = 32;
    o.suffix = 32;
    ax_ms_probe_summary sum;
    AX_CHECK(ax_ms_probe_run(&o, &sum));
    ax_ms_probe_print(&o, &sum, stdout); /* the line `axmem memscan probe` prints */
    return AX_OK;
}

/* 32 generations of 96 tokens at temperature 0.7, slid over the index */
ax_status ax_study_generate(const char *run, const char *index, const char *tok, int deduped) {
    ax_ms_generate_opts o;
    AX_CHECK(ax_cfg_set_defaults(&ax_ms_generate_table, &o));
    char out[1100];
    snprintf(out, sizeof out, "%s/regurgitation.json", run); /* + regurgitation.samples.jsonl */
    const char *text[][2] = {{"ckpt", run}, {"index", index}, {"tokenizer", tok}, {"out", out}};
    for (size_t i = 0; i < sizeof text / sizeof text[0]; i++)
        AX_CHECK(ax_cfg_set(&ax_ms_generate_table, &o, text[i][0], text[i][1], NULL));
    o.samples = 32;
    o.not_training_data = deduped;
    o.length = 96;
    o.temperature = 0.7;
    ax_ms_generate_summary sum;
    AX_CHECK(ax_ms_generate_run(&o, &sum));
    ax_ms_generate_print(&sum, stdout);
    return AX_OK;
}

/* memscan mia's defaults: RUN/mia.json + mia.samples.jsonl */
ax_status ax_study_mia(const char *run, const char *members, const char *nonmembers,
                       const char *tok) {
    ax_ms_mia_opts o;
    AX_CHECK(ax_cfg_set_defaults(&ax_ms_mia_table, &o));
    const char *text[][2] = {{"ckpt", run},
                             {"members", members},
                             {"nonmembers", nonmembers},
                             {"tokenizer", tok},
                             {"out", run}};
    for (size_t i = 0; i < sizeof text / sizeof text[0]; i++)
        AX_CHECK(ax_cfg_set(&ax_ms_mia_table, &o, text[i][0], text[i][1], NULL));
    ax_ms_mia_summary sum;
    AX_CHECK(ax_ms_mia_run(&o, &sum));
    ax_ms_mia_print(&o, &sum, stdout);
    return AX_OK;
}

/* memscan exposure's defaults (exact ranks over a small space): RUN/exposure.json +
 * exposure.samples.jsonl (0600) */
ax_status ax_study_exposure(const char *run, const char *secrets, const char *tok) {
    ax_ms_exposure_opts o;
    AX_CHECK(ax_cfg_set_defaults(&ax_ms_exposure_table, &o));
    const char *text[][2] = {
        {"ckpt", run}, {"canaries", secrets}, {"tokenizer", tok}, {"out", run}};
    for (size_t i = 0; i < sizeof text / sizeof text[0]; i++)
        AX_CHECK(ax_cfg_set(&ax_ms_exposure_table, &o, text[i][0], text[i][1], NULL));
    ax_ms_exposure_summary sum;
    AX_CHECK(ax_ms_exposure_run(&o, &sum));
    ax_ms_exposure_print(&sum, stdout);
    return AX_OK;
}
