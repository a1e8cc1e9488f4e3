/* The training loop: data -> forward/backward over micro-batches -> AdamW -> metrics and
 * checkpoints. Deterministic: the batch for step s is samples [s*batch, (s+1)*batch) of the
 * seeded loader, so a resumed run replays exactly what an uninterrupted one would. */
#include "train/train.h"
#include "data/axd.h"
#include "data/loader.h"
#include "data/tokenizer.h"
#include "lib/ckpt.h"
#include "lib/fsutil.h"
#include "lib/json.h"
#include "lib/log.h"
#include "lib/model.h"
#include "lib/optim.h"
#include "lib/timer.h"
#include "lib/progress.h"

#include <errno.h>
#include <omp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static volatile sig_atomic_t g_stop;
static void on_sigint(int sig) {
    (void)sig;
    if (g_stop) _exit(130); /* second Ctrl-C: the user insists */
    g_stop = 1;
}

typedef struct {
    ax_train_config *cfg;
    ax_axd_t *ds;
    ax_loader_t *loader;
    ax_model_t *model;
    ax_optim_t *optim;
    ax_lr_schedule sched;
    int32_t *sample;  /* [T+1] */
    int32_t *inputs;  /* [MB,T] */
    int32_t *targets; /* [MB,T] */
    uint8_t *mask;    /* [MB,T] */
    char ckpt_dir[AX_CFG_STR_MAX + 16];
    char metrics_path[AX_CFG_STR_MAX + 16];
} run_state;

static void run_free(run_state *r) {
    ax_optim_free(r->optim);
    ax_model_free(r->model);
    ax_loader_free(r->loader);
    ax_axd_free(r->ds);
    free(r->sample), free(r->inputs), free(r->targets), free(r->mask);
}

static ax_status write_checkpoint(run_state *r, long step) {
    ax_jw cfg, state;
    ax_jw_init(&cfg);
    ax_jw_init(&state);
    ax_cfg_write_json(&ax_train_table, r->cfg, &cfg);
    char hex[32];
    snprintf(hex, sizeof hex, "0x%016llx", (unsigned long long)ax_axd_checksum(r->ds));
    ax_jw_obj_begin(&state);
    ax_jw_key(&state, "step");
    ax_jw_int(&state, step);
    ax_jw_key(&state, "optim_t");
    ax_jw_int(&state, ax_optim_t_steps(r->optim));
    ax_jw_key(&state, "dataset_xxh3");
    ax_jw_str(&state, hex);
    ax_jw_key(&state, "dataset_tokens");
    ax_jw_uint(&state, ax_axd_n_tokens(r->ds));
    ax_jw_obj_end(&state);
    ax_status st = AX_OK;
    if (!ax_jw_text(&cfg) || !ax_jw_text(&state)) {
        st = ax_errorf(AX_ERR_NOMEM, "out of memory serialising the checkpoint manifest");
        goto done;
    }
    int64_t n = ax_model_n_params(r->model);
    ax_ckpt_blob blobs[3] = {{"params", ax_model_params(r->model), n},
                             {"adam_m", ax_optim_m(r->optim), n},
                             {"adam_v", ax_optim_v(r->optim), n}};
    ax_ckpt_write_args a = {.grid = "1x1x1x1",
                            .config_json = ax_jw_text(&cfg),
                            .state_json = ax_jw_text(&state),
                            .tensors = ax_model_tensors(r->model),
                            .n_tensors = ax_model_n_tensors(r->model),
                            .blobs = blobs,
                            .n_blobs = 3};
    st = ax_ckpt_write(r->ckpt_dir, step, &a);
    if (st == AX_OK) AX_INFO("checkpoint %s/step-%06ld written", r->ckpt_dir, step);
done:
    ax_jw_free(&cfg);
    ax_jw_free(&state);
    return st;
}

/* Loads params and AdamW moments; the model and optimizer already exist with the
 * checkpoint's shape (the config was merged before they were built). */
static ax_status load_checkpoint(run_state *r, ax_ckpt_t *ck) {
    const ax_json *state = ax_ckpt_state(ck);
    const char *path = ax_ckpt_path(ck);
    uint64_t ds_sum;
    int64_t optim_t;
    AX_CHECK(ax_json_get_hex64(state, "dataset_xxh3", path, &ds_sum));
    AX_CHECK(ax_json_get_i64(state, "optim_t", path, &optim_t));
    if (ds_sum != ax_axd_checksum(r->ds))
        return ax_errorf(AX_ERR_MISMATCH,
                         "--data %s is not the dataset checkpoint %s was trained on (checksum "
                         "0x%016llx, expected 0x%016llx); resume with the original dataset",
                         r->cfg->data, path, (unsigned long long)ax_axd_checksum(r->ds),
                         (unsigned long long)ds_sum);
    int64_t n = ax_model_n_params(r->model);
    int64_t have = 0;
    for (int i = 0; i < ax_ckpt_n_tensors(ck); i++) have += ax_ckpt_tensor(ck, i)->numel;
    if (have != n)
        return ax_errorf(AX_ERR_MISMATCH, "checkpoint %s holds %lld parameters, the model %lld",
                         path, (long long)have, (long long)n);
    AX_CHECK(ax_ckpt_read_blob(ck, "params", 0, n, ax_model_params(r->model)));
    AX_CHECK(ax_ckpt_read_blob(ck, "adam_m", 0, n, ax_optim_m(r->optim)));
    AX_CHECK(ax_ckpt_read_blob(ck, "adam_v", 0, n, ax_optim_v(r->optim)));
    ax_optim_set_t_steps(r->optim, (long)optim_t);
    return AX_OK;
}

/* Keep metrics.jsonl lines with step <= last_step: steps after the checkpoint are replayed. */
static ax_status truncate_metrics(const char *path, long last_step) {
    FILE *f = fopen(path, "r");
    if (!f) return AX_OK;
    char line[4096];
    long keep = 0;
    while (fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "\"step\":");
        if (!p || strtol(p + 7, NULL, 10) > last_step || !strchr(line, '\n')) break;
        keep = ftell(f);
    }
    fclose(f);
    if (truncate(path, keep) != 0)
        return ax_errorf(AX_ERR_IO, "cannot truncate %s: %s", path, strerror(errno));
    return AX_OK;
}

static ax_status open_inputs(run_state *r) {
    ax_train_config *c = r->cfg;
    AX_CHECK(ax_axd_open(c->data, 1, &r->ds));
    uint32_t ds_vocab = ax_axd_vocab_size(r->ds);
    if (c->tokenizer[0]) {
        ax_tokenizer_t *tok = NULL;
        AX_CHECK(ax_tokenizer_load(c->tokenizer, &tok));
        int tv = ax_tokenizer_vocab_size(tok);
        ax_tokenizer_free(tok);
        if ((uint32_t)tv != ds_vocab)
            return ax_errorf(AX_ERR_MISMATCH,
                             "--tokenizer %s has %d tokens but --data %s was encoded with %u; "
                             "encode the data with this tokenizer",
                             c->tokenizer, tv, c->data, ds_vocab);
    }
    if (!c->vocab) c->vocab = ds_vocab;
    if ((uint32_t)c->vocab < ds_vocab)
        return ax_errorf(AX_ERR_ARG, "--vocab %lld is smaller than the dataset's vocabulary %u",
                         (long long)c->vocab, ds_vocab);
    AX_CHECK(ax_loader_create(r->ds, (int)c->seq_len, (uint64_t)c->seed, &r->loader));
    return AX_OK;
}

static ax_status build(run_state *r) {
    ax_train_config *c = r->cfg;
    ax_model_config mc = ax_train_model_config(c);
    int T = (int)c->seq_len, MB = (int)(c->micro_batch ? c->micro_batch : c->batch);
    AX_CHECK(ax_model_create(&mc, MB, T, &r->model));
    ax_adamw_config oc = {(float)c->beta1, (float)c->beta2, (float)c->eps, (float)c->weight_decay,
                          (float)c->grad_clip};
    AX_CHECK(ax_optim_create(ax_model_n_params(r->model), &oc, &r->optim));
    r->sched = (ax_lr_schedule){c->lr, c->min_lr_frac, (long)c->warmup, (long)c->steps};
    size_t n = (size_t)MB * T;
    r->sample = malloc((size_t)(T + 1) * sizeof(int32_t));
    r->inputs = malloc(n * sizeof(int32_t));
    r->targets = malloc(n * sizeof(int32_t));
    r->mask = malloc(n);
    if (!r->sample || !r->inputs || !r->targets || !r->mask)
        return ax_errorf(AX_ERR_NOMEM, "out of memory for the batch buffers");
    return AX_OK;
}

/* Fills micro-batch `mb` of step `step`; returns the number of supervised targets. */
static long fill_micro_batch(run_state *r, long step, int mb) {
    int T = (int)r->cfg->seq_len,
        MB = (int)(r->cfg->micro_batch ? r->cfg->micro_batch : r->cfg->batch);
    long supervised = 0;
    for (int j = 0; j < MB; j++) {
        uint64_t g = (uint64_t)step * (uint64_t)r->cfg->batch + (uint64_t)mb * MB + (uint64_t)j;
        ax_loader_sample(r->loader, g, r->sample, NULL);
        memcpy(r->inputs + (size_t)j * T, r->sample, (size_t)T * sizeof(int32_t));
        memcpy(r->targets + (size_t)j * T, r->sample + 1, (size_t)T * sizeof(int32_t));
        /* packed windows have no padding: every target is supervised */
        memset(r->mask + (size_t)j * T, 1, (size_t)T);
        supervised += T;
    }
    return supervised;
}

static ax_status append_metrics(run_state *r, long step, double loss, double lr, double gnorm,
                                double dt, long tokens) {
    ax_jw w;
    ax_jw_init(&w);
    double flops = ax_model_flops_per_token(ax_model_config_of(r->model), (int)r->cfg->seq_len);
    ax_jw_obj_begin(&w);
    ax_jw_key(&w, "step"), ax_jw_int(&w, step);
    ax_jw_key(&w, "loss"), ax_jw_num(&w, loss);
    ax_jw_key(&w, "lr"), ax_jw_num(&w, lr);
    ax_jw_key(&w, "grad_norm"), ax_jw_num(&w, gnorm);
    ax_jw_key(&w, "tokens"), ax_jw_int(&w, tokens);
    ax_jw_key(&w, "step_time_s"), ax_jw_num(&w, dt);
    ax_jw_key(&w, "tokens_per_s"), ax_jw_num(&w, (double)tokens / dt);
    ax_jw_key(&w, "flops_per_s"), ax_jw_num(&w, flops * (double)tokens / dt);
    ax_jw_obj_end(&w);
    ax_status st = AX_OK;
    FILE *f = fopen(r->metrics_path, "a");
    if (!f || !ax_jw_text(&w) || fprintf(f, "%s\n", ax_jw_text(&w)) < 0 || fclose(f) != 0)
        st = ax_errorf(AX_ERR_IO, "cannot append to %s: %s", r->metrics_path, strerror(errno));
    ax_jw_free(&w);
    return st;
}

ax_status ax_train_run(ax_train_config *cfg, const uint8_t *was_set, ax_train_result *res) {
    run_state r = {.cfg = cfg};
    ax_ckpt_t *ck = NULL;
    ax_status st = AX_OK;
    memset(res, 0, sizeof *res);
    snprintf(r.ckpt_dir, sizeof r.ckpt_dir, "%s/ckpt", cfg->out);
    snprintf(r.metrics_path, sizeof r.metrics_path, "%s/metrics.jsonl", cfg->out);

    if (cfg->resume) {
        char latest[AX_CFG_STR_MAX + 64];
        AX_CHECK_GOTO(ax_ckpt_find_latest(r.ckpt_dir, latest, sizeof latest), out);
        AX_CHECK_GOTO(ax_ckpt_open(latest, &ck), out);
        AX_CHECK_GOTO(ax_train_merge_resumed(cfg, was_set, ax_ckpt_config(ck), latest), out);
        res->first_step = ax_ckpt_step(ck);
    } else {
        AX_CHECK_GOTO(ax_train_apply_preset(cfg, was_set), out);
        char probe[AX_CFG_STR_MAX + 64];
        if (ax_ckpt_find_latest(r.ckpt_dir, probe, sizeof probe) == AX_OK) {
            st = ax_errorf(AX_ERR_ARG,
                           "--out %s already holds checkpoints (%s); pass --resume to "
                           "continue that run, or choose a new --out",
                           cfg->out, probe);
            goto out;
        }
        ax_error_clear(); /* find_latest's "no checkpoint" message is expected here */
    }
    AX_CHECK_GOTO(ax_train_config_check(cfg), out);
    if (cfg->threads > 0) omp_set_num_threads((int)cfg->threads);
    AX_CHECK_GOTO(open_inputs(&r), out);
    AX_CHECK_GOTO(build(&r), out);
    AX_CHECK_GOTO(ax_mkdir_p(cfg->out), out);
    if (ck) {
        AX_CHECK_GOTO(load_checkpoint(&r, ck), out);
        AX_CHECK_GOTO(truncate_metrics(r.metrics_path, res->first_step), out);
        AX_INFO("resumed from %s at step %ld", ax_ckpt_path(ck), res->first_step);
    } else {
        ax_model_init(r.model, (uint64_t)cfg->seed);
        FILE *f = fopen(r.metrics_path, "w");
        if (!f) {
            st = ax_errorf(AX_ERR_IO, "cannot create %s: %s", r.metrics_path, strerror(errno));
            goto out;
        }
        fclose(f);
    }
    ax_model_config mc = *ax_model_config_of(r.model);
    AX_INFO("model: %d layers, dim %d, %d heads, ffn %d, vocab %d: %.2fM parameters; "
            "%lld x %lld tokens per step, %d threads",
            mc.n_layers, mc.dim, mc.n_heads, mc.ffn, mc.vocab,
            (double)ax_model_n_params(r.model) / 1e6, (long long)cfg->batch,
            (long long)cfg->seq_len, omp_get_max_threads());

    g_stop = 0;
    struct sigaction sa = {.sa_handler = on_sigint}, old_sa;
    sigaction(SIGINT, &sa, &old_sa);
    int MB = (int)(cfg->micro_batch ? cfg->micro_batch : cfg->batch);
    int n_micro = (int)(cfg->batch / MB);
    ax_progress prog;
    ax_progress_begin(&prog, "train", res->first_step, cfg->steps);
    long step = res->first_step;
    for (; step < cfg->steps && !g_stop; step++) {
        double t0 = ax_now();
        double lr = ax_lr_at(&r.sched, step);
        ax_model_zero_grad(r.model);
        /* the loss is the mean over all supervised targets of the step: count them first so
         * every micro-batch scales its gradient by the same global 1/n */
        long supervised = 0;
        for (int mb = 0; mb < n_micro; mb++) supervised += fill_micro_batch(&r, step, mb);
        float dscale = supervised ? 1.0f / (float)supervised : 0.0f;
        double loss_sum = 0;
        for (int mb = 0; mb < n_micro; mb++) {
            if (n_micro > 1) fill_micro_batch(&r, step, mb);
            loss_sum += ax_model_forward(r.model, r.inputs, r.targets, r.mask, MB, dscale, 1);
            ax_model_backward(r.model);
        }
        double gnorm = ax_optim_step(r.optim, r.model, lr);
        double dt = ax_now() - t0;
        double loss = supervised ? loss_sum / (double)supervised : 0.0;
        long tokens = (long)(cfg->batch * cfg->seq_len);
        AX_CHECK_GOTO(append_metrics(&r, step + 1, loss, lr, gnorm, dt, tokens), out_sig);
        res->final_loss = loss;
        ax_progress_update(&prog, step + 1, loss, (double)tokens / dt,
                           step + 1 == cfg->steps || (step + 1) % cfg->log_every == 0);
        if (cfg->ckpt_every > 0 && (step + 1) % cfg->ckpt_every == 0 && step + 1 < cfg->steps)
            AX_CHECK_GOTO(write_checkpoint(&r, step + 1), out_sig);
    }
    ax_progress_end(&prog);
    res->last_step = step;
    res->interrupted = g_stop != 0;
    if (res->interrupted) AX_WARN("interrupted: writing a checkpoint at step %ld", step);
    if (step > res->first_step) AX_CHECK_GOTO(write_checkpoint(&r, step), out_sig);
out_sig:
    sigaction(SIGINT, &old_sa, NULL);
out:
    ax_ckpt_free(ck);
    run_free(&r);
    return st;
}
