/* The training loop: data -> forward/backward over micro-batches -> AdamW -> metrics and
 * checkpoints, on a DxXxYxZ grid of MPI ranks (1x1x1x1 without MPI). Deterministic: the
 * batch for step s is samples [s*batch, (s+1)*batch) of the seeded loader, split over the
 * Gdata x Gz batch ranks, so the data order depends on the seed only and a resumed run
 * replays exactly what an uninterrupted one would. With DP-SGD (--dp-clip) a step's batch is
 * instead a Poisson sample keyed by (seed, step, example) (train/train_dp.h). Rank 0 writes
 * every file. */
#include "train/train_run.h"
#include "train/dp_sample.h"
#include "train/run_lock.h"
#include "train/train_dp.h"
#include "train/train_state.h"
#include "data/axd.h"
#include "data/loader.h"
#include "data/tokenizer.h"
#include "goldfish/goldfish.h"
#include "lib/ckpt/ckpt.h"
#include "lib/dist/comm.h"
#include "lib/dist/overlap.h"
#include "lib/dist/overlap_trial.h"
#include "lib/core/fsutil.h"
#include "lib/core/json.h"
#include "lib/core/log.h"
#include "lib/model/model.h"
#include "lib/model/model_io.h"
#include "lib/model/optim.h"
#include "lib/core/progress.h"
#include "lib/core/stop.h"
#include "lib/core/timer.h"

#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

typedef struct {
    ax_train_config *cfg;
    const uint8_t *was_set; /* flags the user gave (may be NULL) */
    ax_grid_t *grid;
    int rank0;
    ax_axd_t *ds;
    ax_loader_t *loader;
    ax_axd_t *val_ds; /* --val-data, or NULL */
    ax_loader_t *val_loader;
    ax_model_t *model;
    ax_optim_t *optim;
    ax_lr_schedule sched;
    int mb_global, mb_local; /* sequences per micro-batch: global, this rank */
    ax_goldfish goldfish;
    int ctx;           /* tokens of left context the mask reads before a window */
    int32_t *sample;   /* [ctx + T + 1]: context, then the window */
    uint32_t *doc_pos; /* [ctx + T + 1] */
    int32_t *inputs;   /* [mb_local, T] */
    int32_t *targets;  /* [mb_local, T] */
    uint8_t *mask;     /* [mb_local, T] */
    char ckpt_dir[AX_CFG_STR_MAX + 16];
    char metrics_path[AX_CFG_STR_MAX + 16];
    const ax_train_scan_hook *hook;      /* NULL unless --scan-every runs scans */
    long scan_prev_step;                 /* rank 0: the latest scan's step (-1: none yet) */
    double scan_prev_hi;                 /* and the upper bound of its headline rate */
    ax_ckpt_t *init_ck;                  /* --init on a new run: the weights to start from */
    char init_step[AX_CFG_STR_MAX + 64]; /* --init's step directory ("" without --init) */
    uint64_t init_sum;                   /* XXH3 of its manifest.json (pins every shard) */
    int init_max_pos;                    /* its position limit, which exports keep */
    ax_overlap_trial trial;              /* timing both schedules on one-host axes (AUTO) */
    long saved; /* the step of the newest checkpoint on disk (-1: none of this run's yet) */
    int dp_on;  /* DP-SGD (--dp-clip): Poisson-sampled steps of clipped, noised gradients */
    ax_train_dp dp;
    float *norms;      /* [mb_local]: the micro-batch's per-example gradient norms */
    double dp_clipped; /* the last step: the fraction of its examples whose norm exceeded C */
} run_state;

static void run_free(run_state *r) {
    ax_ckpt_free(r->init_ck);
    ax_optim_free(r->optim);
    ax_model_free(r->model);
    ax_loader_free(r->loader);
    ax_axd_free(r->ds);
    ax_loader_free(r->val_loader);
    ax_axd_free(r->val_ds);
    ax_grid_free(r->grid);
    ax_train_dp_free(&r->dp);
    free(r->norms);
    free(r->sample), free(r->doc_pos), free(r->inputs), free(r->targets), free(r->mask);
}

/* Ranks must fail together: a rank that cannot go on would leave the others waiting in a
 * collective. Each phase ends here; a rank that did fine reports that another one failed. */
static ax_status agree(ax_grid_t *g, ax_status st) {
    if (!g) return st;
    double bad = st != AX_OK;
    if (ax_coll_allreduce(g, AX_AXIS_WORLD, &bad, 1, AX_DT_F64, AX_OP_MAX) != AX_OK)
        return AX_ERR_MPI;
    if (bad && st == AX_OK)
        st = ax_errorf(AX_ERR_MPI, "another rank failed (its message is above)");
    return st;
}

static ax_status write_manifest_and_blobs(run_state *r, long step, float *const blobs[3]) {
    ax_jw cfg, state;
    ax_jw_init(&cfg);
    ax_jw_init(&state);
    ax_cfg_write_json(&ax_train_table, r->cfg, &cfg);
    char hex[32];
    snprintf(hex, sizeof hex, "0x%016llx", (unsigned long long)ax_axd_checksum(r->ds));
    ax_jw_obj_begin(&state);
    ax_jw_key(&state, "step"), ax_jw_int(&state, step);
    ax_jw_key(&state, "optim_t"), ax_jw_int(&state, ax_optim_t_steps(r->optim));
    ax_jw_key(&state, "dataset_xxh3"), ax_jw_str(&state, hex);
    ax_jw_key(&state, "dataset_tokens"), ax_jw_uint(&state, ax_axd_n_tokens(r->ds));
    if (r->val_ds) { /* lets a resumed run accept a moved --val-data with the same contents */
        snprintf(hex, sizeof hex, "0x%016llx", (unsigned long long)ax_axd_checksum(r->val_ds));
        ax_jw_key(&state, "val_dataset_xxh3"), ax_jw_str(&state, hex);
    }
    if (r->init_step[0]) { /* what this fine-tuning run started from, carried through resumes */
        snprintf(hex, sizeof hex, "0x%016llx", (unsigned long long)r->init_sum);
        ax_jw_key(&state, "init_ckpt"), ax_jw_str(&state, r->init_step);
        ax_jw_key(&state, "init_xxh3"), ax_jw_str(&state, hex);
        if (r->init_max_pos)
            ax_jw_key(&state, "init_max_positions"), ax_jw_int(&state, r->init_max_pos);
    }
    if (r->dp_on) ax_train_dp_write_state(&r->dp, &state); /* resumed runs continue epsilon */
    ax_jw_obj_end(&state);
    ax_status st;
    if (!ax_jw_text(&cfg) || !ax_jw_text(&state)) {
        st = ax_errorf(AX_ERR_NOMEM, "out of memory serialising the checkpoint manifest");
    } else {
        int64_t n = ax_model_n_params(r->model);
        ax_ckpt_blob b[3] = {
            {"params", blobs[0], n}, {"adam_m", blobs[1], n}, {"adam_v", blobs[2], n}};
        ax_ckpt_write_args a = {.grid = ax_grid_spec(r->grid),
                                .config_json = ax_jw_text(&cfg),
                                .state_json = ax_jw_text(&state),
                                .tensors = ax_model_tensors(r->model),
                                .n_tensors = ax_model_n_tensors(r->model),
                                .blobs = b,
                                .n_blobs = 3};
        st = ax_ckpt_write(r->ckpt_dir, step, &a);
    }
    ax_jw_free(&cfg);
    ax_jw_free(&state);
    return st;
}

/* The run diverged at `step` (1-based) for the reason `what`: the error that stops it, naming
 * the step and the newest checkpoint. */
static ax_status diverged(const run_state *r, long step, const char *what) {
    char newest[AX_CFG_STR_MAX + 96];
    if (r->saved >= 0)
        snprintf(newest, sizeof newest, "the newest checkpoint, %s/step-%06ld, is from before it",
                 r->ckpt_dir, r->saved);
    else
        snprintf(newest, sizeof newest, "this run has written no checkpoint");
    return ax_errorf(AX_ERR_CORRUPT,
                     "step %ld: training diverged (%s): stopped without writing anything from "
                     "this state; %s. Start again with a lower --lr, a longer --warmup or "
                     "--grad-clip",
                     step, what, newest);
}

/* Checkpoints hold the global tensors (the 1x1x1x1 layout), so any grid can load them:
 * every rank takes part in gathering each tensor, rank 0 writes. */
static ax_status write_checkpoint(run_state *r, long step) {
    int64_t n = ax_model_n_params(r->model);
    const ax_slab *local[3] = {ax_model_slab(r->model, AX_SLAB_PARAMS),
                               ax_optim_slab(r->optim, AX_OPTIM_M),
                               ax_optim_slab(r->optim, AX_OPTIM_V)};
    float *global[3] = {NULL, NULL, NULL};
    ax_status st = AX_OK;
    if (r->rank0)
        for (int b = 0; b < 3; b++)
            if (!(global[b] = malloc((size_t)n * sizeof(float))))
                st = ax_errorf(AX_ERR_NOMEM, "out of memory assembling the checkpoint");
    st = agree(r->grid, st);
    const ax_tensor_info *ts = ax_model_tensors(r->model);
    for (int b = 0; b < 3 && st == AX_OK; b++)
        for (int i = 0; i < ax_model_n_tensors(r->model) && st == AX_OK; i++)
            st = ax_model_gather_tensor(r->model, i, local[b],
                                        global[b] ? global[b] + ts[i].offset : NULL);
    if (st == AX_OK && r->rank0) {
        st = write_manifest_and_blobs(r, step, global);
        if (st == AX_OK) AX_INFO("checkpoint %s/step-%06ld written", r->ckpt_dir, step);
    }
    if (st == AX_ERR_CORRUPT) { /* non-finite weights or moments after a step with a finite loss */
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", ax_error_msg());
        ax_error_clear(); /* the first message wins: replace it with the fuller one */
        st = diverged(r, step, msg);
    }
    for (int b = 0; b < 3; b++) free(global[b]);
    st = agree(r->grid, st);
    if (st == AX_OK) r->saved = step;
    return st;
}

/* --val-data on resume: the checkpoint's file, or one with the same checksum. */
static ax_status check_val_data(run_state *r, ax_ckpt_t *ck) {
    const char *path = ax_ckpt_path(ck), *was = "";
    uint64_t sum = ax_axd_checksum(r->val_ds), want;
    if (ax_json_get(ax_ckpt_state(ck), "val_dataset_xxh3")) {
        AX_CHECK(ax_json_get_hex64(ax_ckpt_state(ck), "val_dataset_xxh3", path, &want));
        if (sum == want) return AX_OK;
        return ax_errorf(AX_ERR_MISMATCH,
                         "--val-data %s is not the validation set checkpoint %s was scored on "
                         "(checksum 0x%016llx, expected 0x%016llx); pass the original file",
                         r->cfg->val_data, path, (unsigned long long)sum, (unsigned long long)want);
    }
    /* a checkpoint from before validation checksums were recorded: only the same path */
    if (ax_json_get(ax_ckpt_config(ck), "val-data"))
        AX_CHECK(ax_json_get_str(ax_ckpt_config(ck), "val-data", path, &was));
    if (!strcmp(was, r->cfg->val_data)) return AX_OK;
    if (!was[0])
        return ax_errorf(AX_ERR_MISMATCH,
                         "--val-data: the run resumed from %s has no validation set, and adding "
                         "one changes its metrics; drop --val-data, or start a new --out",
                         path);
    return ax_errorf(AX_ERR_MISMATCH,
                     "--val-data %s differs from %s's '%s' and that checkpoint records no "
                     "checksum to compare; pass the original path",
                     r->cfg->val_data, path, was);
}

/* Each blob of a training checkpoint holds exactly the model's parameters (a longer one was
 * not written by this model: reading its first part would load the wrong values). */
static ax_status check_blob_sizes(run_state *r, ax_ckpt_t *ck) {
    static const char *const blobs[] = {"params", "adam_m", "adam_v"};
    int64_t n = ax_model_n_params(r->model);
    for (int b = 0; b < 3; b++) {
        int64_t have = ax_ckpt_blob_count(ck, blobs[b]);
        if (have >= 0 && have != n) /* a missing blob is reported by the load, naming it */
            return ax_errorf(AX_ERR_CORRUPT,
                             "%s/manifest.json: blob \"%s\" holds %lld values, the model %lld; "
                             "the checkpoint is damaged: move it aside and resume from the one "
                             "before it",
                             ax_ckpt_path(ck), blobs[b], (long long)have, (long long)n);
    }
    return AX_OK;
}

/* Loads params and AdamW moments from the global layout into this rank's shards. The state's
 * fields were checked when the checkpoint was opened (ax_train_check_state); here they meet
 * the datasets and the model. */
static ax_status load_checkpoint(run_state *r, ax_ckpt_t *ck) {
    const ax_json *state = ax_ckpt_state(ck);
    const char *path = ax_ckpt_path(ck);
    uint64_t ds_sum;
    int64_t ds_tokens;
    AX_CHECK(ax_json_get_hex64(state, "dataset_xxh3", path, &ds_sum));
    AX_CHECK(ax_json_get_i64(state, "dataset_tokens", path, &ds_tokens));
    if (ds_sum != ax_axd_checksum(r->ds))
        return ax_errorf(AX_ERR_MISMATCH,
                         "--data %s is not the dataset checkpoint %s was trained on (checksum "
                         "0x%016llx, expected 0x%016llx); resume with the original dataset",
                         r->cfg->data, path, (unsigned long long)ax_axd_checksum(r->ds),
                         (unsigned long long)ds_sum);
    if ((uint64_t)ds_tokens != ax_axd_n_tokens(r->ds))
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s/manifest.json: state \"dataset_tokens\" is %lld, but the dataset "
                         "with its checksum (--data %s) holds %llu tokens; the manifest was "
                         "edited or damaged: move %s aside and resume from the checkpoint "
                         "before it",
                         path, (long long)ds_tokens, r->cfg->data,
                         (unsigned long long)ax_axd_n_tokens(r->ds), path);
    if (r->val_ds) AX_CHECK(check_val_data(r, ck));
    AX_CHECK(check_blob_sizes(r, ck));
    AX_CHECK(ax_model_load_blob(r->model, ck, "params", ax_model_slab(r->model, AX_SLAB_PARAMS)));
    AX_CHECK(ax_model_load_blob(r->model, ck, "adam_m", ax_optim_slab(r->optim, AX_OPTIM_M)));
    AX_CHECK(ax_model_load_blob(r->model, ck, "adam_v", ax_optim_slab(r->optim, AX_OPTIM_V)));
    AX_CHECK(ax_optim_check_moments(r->optim, r->model, path));
    /* one AdamW update per step: the state check made optim_t equal the step */
    ax_optim_set_t_steps(r->optim, ax_ckpt_step(ck));
    return AX_OK;
}

/* Keep metrics.jsonl lines with step <= last_step: steps after the checkpoint are replayed. */
static ax_status truncate_metrics(const char *path, long last_step) {
    if (!ax_path_exists(path)) return AX_OK; /* nothing logged yet */
    FILE *f; /* a regular file only: a FIFO in its place would block the resume forever */
    AX_CHECK(ax_fopen_regular(path, "it is the run's training log", &f));
    char line[1 << 14];
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

/* A file named by the resumed checkpoint (not by this command line) cannot be opened: say
 * where the path came from and how to point at a moved copy. */
static ax_status from_ckpt_hint(run_state *r, ax_status st, const char *flag) {
    if (st == AX_OK || !r->cfg->resume || ax_train_flag_set(r->was_set, flag)) return st;
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", ax_error_msg());
    ax_error_clear(); /* the first message wins: replace it with the fuller one */
    return ax_errorf(st,
                     "%s (the run's --%s, from its checkpoint); if the file moved, resume "
                     "with --%s NEW_PATH (the contents must be the same)",
                     msg, flag, flag);
}

static ax_status open_inputs(run_state *r) {
    ax_train_config *c = r->cfg;
    AX_CHECK(from_ckpt_hint(r, ax_axd_open(c->data, 1, &r->ds), "data"));
    uint32_t ds_vocab = ax_axd_vocab_size(r->ds);
    if (c->tokenizer[0]) {
        ax_tokenizer_t *tok = NULL;
        AX_CHECK(from_ckpt_hint(r, ax_tokenizer_load(c->tokenizer, &tok), "tokenizer"));
        ax_status st = ax_axd_check_tokenizer(r->ds, tok, c->tokenizer);
        ax_tokenizer_free(tok);
        AX_CHECK(st);
    }
    if (!c->vocab) c->vocab = ds_vocab;
    if (c->init[0] && (uint32_t)c->vocab < ds_vocab)
        return ax_errorf(AX_ERR_MISMATCH,
                         "--data %s has vocabulary %u, more than the %lld of --init %s; encode "
                         "the data with the checkpoint's tokenizer",
                         c->data, ds_vocab, (long long)c->vocab, c->init);
    if ((uint32_t)c->vocab < ds_vocab)
        return ax_errorf(AX_ERR_ARG, "--vocab %lld is smaller than the dataset's vocabulary %u",
                         (long long)c->vocab, ds_vocab);
    if (c->val_data[0]) {
        AX_CHECK(from_ckpt_hint(r, ax_axd_open(c->val_data, 1, &r->val_ds), "val-data"));
        if (ax_axd_vocab_size(r->val_ds) != ds_vocab)
            return ax_errorf(AX_ERR_MISMATCH,
                             "--val-data %s has vocabulary %u, --data %s %u; encode "
                             "both with the same tokenizer",
                             c->val_data, ax_axd_vocab_size(r->val_ds), c->data, ds_vocab);
        /* seed 0, whatever the run's seed: every run is scored on the same windows */
        AX_CHECK(ax_loader_create(r->val_ds, (int)c->seq_len, 0, &r->val_loader));
    }
    if (!strcmp(c->packing, "doc"))
        AX_CHECK(ax_loader_create_docs(r->ds, (int)c->seq_len, (uint64_t)c->seed, &r->loader));
    else
        AX_CHECK(ax_loader_create(r->ds, (int)c->seq_len, (uint64_t)c->seed, &r->loader));
    return AX_OK;
}

/* --overlap / --force-overlap / --no-overlap as lib/dist/overlap.h's mode */
static int overlap_mode(const ax_train_config *c) {
    return !c->overlap ? AX_OVERLAP_OFF : c->force_overlap ? AX_OVERLAP_FORCE : AX_OVERLAP_AUTO;
}

/* Per grid axis of more than one rank, whether the schedule overlaps and why, as the model
 * runs it now ({"x": "off: ...", ...}): the rule's answer (ax_overlap_decide_axis), or while
 * and after the first steps time both schedules on a one-host axis, what they measured. */
static void overlap_json(run_state *r, ax_jw *w) {
    ax_jw_obj_begin(w);
    for (int a = AX_AXIS_DATA; a <= AX_AXIS_Z; a++) {
        if (ax_grid_dim(r->grid, (ax_axis)a) < 2) continue;
        ax_jw_key(w, ax_axis_name((ax_axis)a));
        ax_jw_str(w, ax_overlap_axis_why(ax_model_overlap(r->model), (ax_axis)a));
    }
    ax_jw_obj_end(w);
}

static void overlap_log(run_state *r, ax_axis a, const char *tail) {
    AX_INFO("overlap on axis %s (%d ranks): %s%s", ax_axis_name(a), ax_grid_dim(r->grid, a),
            ax_overlap_axis_why(ax_model_overlap(r->model), a), tail);
}

/* The rule's answer per axis; axes the first steps will time say so. */
static void overlap_summary(run_state *r) {
    const ax_overlap_trial *tr = &r->trial;
    for (int a = AX_AXIS_DATA; a <= AX_AXIS_Z; a++) {
        if (ax_grid_dim(r->grid, (ax_axis)a) < 2) continue;
        int timed = 0;
        for (int i = 0; i < tr->n; i++) timed |= tr->axes[i] == (ax_axis)a;
        overlap_log(r, (ax_axis)a,
                    timed ? "; the first steps time both schedules and keep the faster" : "");
    }
}

static ax_status build(run_state *r) {
    ax_train_config *c = r->cfg;
    int parts = ax_grid_dim(r->grid, AX_AXIS_BATCH);
    r->mb_global = (int)(c->micro_batch ? c->micro_batch : c->batch);
    if (r->mb_global % parts)
        return ax_errorf(AX_ERR_ARG,
                         "the micro-batch of %d sequences does not split over the "
                         "%d batch ranks (Gdata x Gz) of --grid %s; pick --batch/--micro-batch "
                         "divisible by %d",
                         r->mb_global, parts, c->grid, parts);
    r->mb_local = r->mb_global / parts;
    ax_model_config mc = ax_train_model_config(c);
    int T = (int)c->seq_len;
    AX_CHECK(ax_comm_select(c->comm));
    ax_model_opts mo = {.overlap = overlap_mode(c),
                        .device = AX_CFG_DEVICE_SPEC(c),
                        .recompute = c->recompute,
                        .stream_z = !strcmp(c->z_gather, "layer"),
                        .grad_comm_bf16 = !strcmp(c->grad_comm, "bf16")};
    AX_CHECK(ax_model_create_ex(r->grid, &mc, r->mb_local, T, &mo, &r->model));
    if (mo.grad_comm_bf16 && ax_grid_dim(r->grid, AX_AXIS_DATA) == 1 &&
        ax_grid_dim(r->grid, AX_AXIS_Z) == 1)
        AX_WARN("--grad-comm bf16 does nothing on --grid %s: only a data or Z axis of more than "
                "one rank reduces gradients",
                c->grid);
    else if (mo.grad_comm_bf16)
        AX_INFO("gradients reduced in bf16 over %s%s%s: %.1f MiB of bf16 staging per rank",
                ax_grid_dim(r->grid, AX_AXIS_DATA) > 1 ? "data" : "",
                ax_grid_dim(r->grid, AX_AXIS_DATA) > 1 && ax_grid_dim(r->grid, AX_AXIS_Z) > 1
                    ? " and "
                    : "",
                ax_grid_dim(r->grid, AX_AXIS_Z) > 1 ? "Z" : "",
                ax_model_grad_comm_bytes(r->model) / 1048576.0);
    if (!strcmp(c->z_gather, "layer") && ax_grid_dim(r->grid, AX_AXIS_Z) == 1)
        AX_WARN("--z-gather layer does nothing on --grid %s: only a Z axis of more than one rank "
                "gathers weights",
                c->grid);
    size_t act = ax_model_activation_bytes(r->model);
    AX_INFO("activations: %.1f MiB (%zu bytes) per rank for micro-batches of %d x %d%s%s",
            (double)act / 1048576.0, act, r->mb_local, T,
            c->recompute ? " (recomputed in the backward: --recompute)" : "",
            ax_model_bf16_activations(r->model) ? " (norm and MLP outputs stored in bf16)" : "");
    ax_adamw_config oc = {(float)c->beta1, (float)c->beta2, (float)c->eps, (float)c->weight_decay,
                          (float)c->grad_clip};
    AX_CHECK(ax_optim_create(r->model, &oc, &r->optim));
    r->sched = (ax_lr_schedule){c->lr, c->min_lr_frac, (long)c->warmup, (long)c->steps};
    size_t n = (size_t)r->mb_local * T;
    r->ctx = ax_goldfish_context(&r->goldfish);
    r->sample = calloc((size_t)(r->ctx + T + 1), sizeof(int32_t));
    r->doc_pos = calloc((size_t)(r->ctx + T + 1), sizeof(uint32_t));
    r->inputs = malloc(n * sizeof(int32_t));
    r->targets = malloc(n * sizeof(int32_t));
    r->mask = malloc(n);
    r->norms = calloc((size_t)r->mb_local, sizeof(float));
    if (!r->sample || !r->doc_pos || !r->inputs || !r->targets || !r->mask || !r->norms)
        return ax_errorf(AX_ERR_NOMEM, "out of memory for the batch buffers");
    return AX_OK;
}

/* Fills row j of the micro-batch buffers with the loader's sample g; returns its supervised
 * targets and adds its real (non-padding) targets to *real. */
static long fill_row(run_state *r, uint64_t g, int j, double *real) {
    int T = (int)r->cfg->seq_len, ctx = r->ctx;
    int32_t *win = r->sample + ctx;
    int n = ax_loader_sample_len(r->loader, g, win, r->doc_pos + ctx);
    if (ctx) { /* the hash mask reads the h tokens before each target, across the window */
        uint64_t start = ax_loader_start(r->loader, g);
        uint64_t have = start < (uint64_t)ctx ? start : (uint64_t)ctx;
        ax_axd_tokens(r->ds, start - have, have, win - have);
    }
    uint8_t *keep = r->mask + (size_t)j * T;
    memcpy(r->inputs + (size_t)j * T, win, (size_t)T * sizeof(int32_t));
    memcpy(r->targets + (size_t)j * T, win + 1, (size_t)T * sizeof(int32_t));
    /* targets are win[1..T]; a mask depends on the token ids (and position) only */
    ax_goldfish_mask(&r->goldfish, win + 1, r->doc_pos + ctx + 1, T, keep);
    if (n - 1 < T) memset(keep + n - 1, 0, (size_t)(T - (n - 1))); /* padding */
    *real += n - 1;
    return T - ax_goldfish_count_dropped(keep, T);
}

/* Row j as padding: no supervised target, so it adds nothing to a step */
static void pad_row(run_state *r, int j) {
    size_t T = (size_t)r->cfg->seq_len;
    memset(r->inputs + (size_t)j * T, 0, T * sizeof(int32_t));
    memset(r->targets + (size_t)j * T, 0, T * sizeof(int32_t));
    memset(r->mask + (size_t)j * T, 0, T);
}

/* Fills this rank's part of micro-batch `mb` of `step`; returns its supervised targets and
 * adds its real (non-padding) targets to *real. */
static long fill_micro_batch(run_state *r, long step, int mb, double *real) {
    uint64_t first = (uint64_t)step * (uint64_t)r->cfg->batch + (uint64_t)mb * r->mb_global +
                     (uint64_t)ax_grid_coord(r->grid, AX_AXIS_BATCH) * r->mb_local;
    long supervised = 0;
    for (int j = 0; j < r->mb_local; j++) supervised += fill_row(r, first + (uint64_t)j, j, real);
    return supervised;
}

/* Mean loss on the held-out windows, every target counted (no goldfish): what the model
 * really learned. Collective. */
static ax_status validate(run_state *r, double *out) {
    int T = (int)r->cfg->seq_len;
    double sums[2] = {0, 0};
    uint64_t per_batch = (uint64_t)r->cfg->batch;
    for (int64_t b = 0; b < r->cfg->val_batches; b++)
        for (int mb = 0; mb < (int)(r->cfg->batch / r->mb_global); mb++) {
            uint64_t first = (uint64_t)b * per_batch + (uint64_t)mb * r->mb_global +
                             (uint64_t)ax_grid_coord(r->grid, AX_AXIS_BATCH) * r->mb_local;
            for (int j = 0; j < r->mb_local; j++) {
                ax_loader_sample(r->val_loader, first + (uint64_t)j, r->sample, NULL);
                memcpy(r->inputs + (size_t)j * T, r->sample, (size_t)T * sizeof(int32_t));
                memcpy(r->targets + (size_t)j * T, r->sample + 1, (size_t)T * sizeof(int32_t));
            }
            memset(r->mask, 1, (size_t)r->mb_local * T);
            sums[0] +=
                ax_model_forward(r->model, r->inputs, r->targets, r->mask, r->mb_local, 1.0f, 0);
            sums[1] += (double)r->mb_local * T;
        }
    AX_CHECK(ax_model_status(r->model));
    AX_CHECK(ax_coll_allreduce(r->grid, AX_AXIS_BATCH, sums, 2, AX_DT_F64, AX_OP_SUM));
    *out = sums[0] / sums[1];
    return AX_OK;
}

static ax_status append_metrics(run_state *r, long step, double loss, double lr, double gnorm,
                                double dt, long tokens, double dropped_frac, double val_loss) {
    ax_jw w;
    ax_jw_init(&w);
    double flops = ax_model_flops_per_token(ax_model_config_of(r->model), (int)r->cfg->seq_len);
    ax_comm_stats cs;
    ax_comm_stats_get(r->grid, &cs);
    ax_jw_obj_begin(&w);
    ax_jw_key(&w, "step"), ax_jw_int(&w, step);
    ax_jw_key(&w, "loss"), ax_jw_num(&w, loss);
    ax_jw_key(&w, "lr"), ax_jw_num(&w, lr);
    ax_jw_key(&w, "grad_norm"), ax_jw_num(&w, gnorm);
    ax_jw_key(&w, "dropped_frac"), ax_jw_num(&w, dropped_frac);
    if (val_loss >= 0) ax_jw_key(&w, "val_loss"), ax_jw_num(&w, val_loss);
    if (r->dp_on) { /* epsilon after this step, for the run's delta */
        ax_jw_key(&w, "dp_epsilon"), ax_jw_num(&w, r->dp.epsilon);
        ax_jw_key(&w, "dp_delta"), ax_jw_num(&w, r->dp.delta);
        ax_jw_key(&w, "dp_examples"), ax_jw_int(&w, r->dp.n);
        ax_jw_key(&w, "dp_clipped_frac"), ax_jw_num(&w, r->dp_clipped);
    }
    ax_jw_key(&w, "tokens"), ax_jw_int(&w, tokens);
    ax_jw_key(&w, "step_time_s"), ax_jw_num(&w, dt);
    ax_jw_key(&w, "tokens_per_s"), ax_jw_num(&w, (double)tokens / dt);
    ax_jw_key(&w, "flops_per_s"), ax_jw_num(&w, flops * (double)tokens / dt);
    ax_jw_key(&w, "comm"), ax_comm_stats_json(&cs, &w);
    ax_jw_key(&w, "overlap"), overlap_json(r, &w);
    ax_jw_obj_end(&w);
    ax_status st = AX_OK;
    FILE *f = fopen(r->metrics_path, "a");
    if (!f || !ax_jw_text(&w) || fprintf(f, "%s\n", ax_jw_text(&w)) < 0 || fclose(f) != 0)
        st = ax_errorf(AX_ERR_IO, "cannot append to %s: %s", r->metrics_path, strerror(errno));
    ax_jw_free(&w);
    return st;
}

/* ---- scans inside training (train/train_run.h) ---- */

static ax_status append_line(run_state *r, const char *text) {
    FILE *f = fopen(r->metrics_path, "a");
    ax_status st = AX_OK;
    if (!f || !text || fprintf(f, "%s\n", text) < 0 || fclose(f) != 0)
        st = ax_errorf(AX_ERR_IO, "cannot append to %s: %s", r->metrics_path, strerror(errno));
    return st;
}

/* The scan of the checkpoint just written at `step`: collective; rank 0 logs the record and
 * warns when the rate rose above the previous scan's upper bound. */
static ax_status run_scan(run_state *r, long step) {
    const ax_train_scan_hook *h = r->hook;
    char ckpt[AX_CFG_STR_MAX + 64];
    snprintf(ckpt, sizeof ckpt, "%s/step-%06ld", r->ckpt_dir, step);
    ax_train_scan_point p = {step, ckpt, r->cfg->out, r->grid, r->cfg->device};
    double rate = 0, lo = 0, hi = 0;
    ax_jw w;
    ax_jw_init(&w);
    ax_jw_obj_begin(&w);
    ax_jw_key(&w, "step"), ax_jw_int(&w, step);
    ax_jw_key(&w, "scan"), ax_jw_str(&w, h->name);
    ax_status st = agree(r->grid, h->scan(h->ctx, &p, &w, &rate, &lo, &hi));
    if (st == AX_OK && r->rank0) {
        int rising = r->scan_prev_step >= 0 && rate > r->scan_prev_hi;
        ax_jw_key(&w, "extraction_rising"), ax_jw_bool(&w, rising);
        ax_jw_obj_end(&w);
        st = append_line(r, ax_jw_text(&w));
        if (rising)
            AX_WARN("step %ld: extraction rising: %s %.4g is above the upper bound %.4g of the "
                    "95%% interval at the previous scan (step %ld); see %s",
                    step, h->rate_key, rate, r->scan_prev_hi, r->scan_prev_step, r->metrics_path);
        r->scan_prev_step = step, r->scan_prev_hi = hi;
    }
    ax_jw_free(&w);
    (void)lo;
    return agree(r->grid, st);
}

/* After a resume (rank 0): the latest scan record in metrics.jsonl (already cut at the resumed
 * step), so the warning compares with it; *missing = the resumed step is a scan step without
 * its record (the run stopped between the checkpoint and the scan). */
static ax_status restore_scans(run_state *r, long first, int *missing) {
    char key[96], *line = NULL;
    size_t cap = 0;
    ssize_t n;
    FILE *f = NULL;
    *missing = 0;
    snprintf(key, sizeof key, "%s_hi", r->hook->rate_key);
    if (ax_path_exists(r->metrics_path)) /* line by line: a long run's log can be big */
        AX_CHECK(ax_fopen_regular(r->metrics_path, "it is the run's training log", &f));
    while (f && (n = getline(&line, &cap, f)) > 0) {
        if (!strstr(line, "\"scan\"")) continue;
        ax_json *j = NULL;
        if (ax_json_parse(line, (size_t)n, r->metrics_path, &j) == AX_OK) {
            const ax_json *sc = ax_json_get(j, "scan"), *st = ax_json_get(j, "step"),
                          *hi = ax_json_get(j, key);
            if (sc && sc->type == AX_JSON_STR && !strcmp(sc->str, r->hook->name) && st &&
                st->type == AX_JSON_NUM && hi && hi->type == AX_JSON_NUM)
                r->scan_prev_step = (long)st->num, r->scan_prev_hi = hi->num;
        }
        ax_error_clear(); /* a line that is not a record is not this run's concern */
        ax_json_free(j);
    }
    free(line);
    if (f) fclose(f);
    *missing = first > 0 && first % r->cfg->scan_every == 0 && r->scan_prev_step != first;
    return AX_OK;
}

/* One DP-SGD step (train/train_dp.h): the step's Poisson sample, example e being the loader's
 * sample e (epoch 0 of its seeded order: window or document e up to a permutation), laid out
 * over micro-batches and batch ranks (train/dp_sample.h); per-example clipped gradients summed
 * and scaled by 1 / (q N), the noise once, AdamW without the global clip. Returns the mean loss
 * over the sampled examples' supervised targets (all ranks). */
static ax_status dp_train_step(run_state *r, long step, double lr, double *loss, double *gnorm,
                               double *supervised, double *real) {
    ax_train_dp *d = &r->dp;
    int B = r->mb_local, P = ax_grid_dim(r->grid, AX_AXIS_BATCH);
    int part = ax_grid_coord(r->grid, AX_AXIS_BATCH);
    AX_CHECK(ax_dp_sample_step(d->sample_seed, step, (uint64_t)d->examples, d->q, &d->sample,
                               &d->cap, &d->n));
    int64_t n_micro = ax_dp_micro_count(d->n, B, P);
    double scale = 1.0 / (d->q * (double)d->examples);
    double sums[4] = {0, 0, 0, 0}; /* supervised, loss sum, real targets, clipped examples */
    ax_model_zero_grad(r->model);
    for (int64_t mb = 0; mb < n_micro; mb++) {
        for (int j = 0; j < B; j++) {
            int64_t k = ax_dp_row_position(d->n, B, P, mb, part, j);
            if (k < 0)
                pad_row(r, j);
            else
                sums[0] += (double)fill_row(r, (uint64_t)d->sample[k], j, &sums[2]);
        }
        sums[1] += ax_model_dp_micro(r->model, r->inputs, r->targets, r->mask, B, (float)d->clip,
                                     (float)scale, mb == n_micro - 1, r->norms);
        for (int j = 0; j < B; j++)
            sums[3] += ax_dp_row_position(d->n, B, P, mb, part, j) >= 0 && r->norms[j] > d->clip;
    }
    AX_CHECK(ax_model_status(r->model));
    AX_CHECK(ax_coll_allreduce(r->grid, AX_AXIS_BATCH, sums, 4, AX_DT_F64, AX_OP_SUM));
    AX_CHECK(ax_model_dp_noise(r->model, d->sigma * d->clip * scale, d->noise_seed, step));
    AX_CHECK(ax_optim_step(r->optim, r->model, lr, gnorm));
    AX_CHECK(ax_model_status(r->model));
    *loss = sums[0] > 0 ? sums[1] / sums[0] : 0.0;
    *supervised = sums[0];
    *real = sums[2];
    r->dp_clipped = d->n > 0 ? sums[3] / (double)d->n : 0.0;
    return AX_OK;
}

/* One optimizer step over all micro-batches. Returns the global mean loss and grad norm. */
static ax_status train_step(run_state *r, long step, double lr, double *loss, double *gnorm,
                            double *supervised, double *real) {
    if (r->dp_on) return dp_train_step(r, step, lr, loss, gnorm, supervised, real);
    int n_micro = (int)(r->cfg->batch / r->mb_global);
    ax_model_zero_grad(r->model);
    /* the loss is the mean over all supervised targets of the step, on every rank: count
     * them first so every micro-batch scales its gradient by the same global 1/n */
    double counts[3] = {0, 0, 0}; /* supervised, loss sum, real targets */
    for (int mb = 0; mb < n_micro; mb++)
        counts[0] += (double)fill_micro_batch(r, step, mb, &counts[2]);
    double sums[2] = {counts[0], counts[2]};
    AX_CHECK(ax_coll_allreduce(r->grid, AX_AXIS_BATCH, sums, 2, AX_DT_F64, AX_OP_SUM));
    counts[0] = sums[0];
    float dscale = counts[0] > 0 ? (float)(1.0 / counts[0]) : 0.0f;
    for (int mb = 0; mb < n_micro; mb++) {
        double unused = 0;
        if (n_micro > 1) fill_micro_batch(r, step, mb, &unused);
        counts[1] +=
            ax_model_forward(r->model, r->inputs, r->targets, r->mask, r->mb_local, dscale, 1);
        ax_model_backward_ex(r->model, mb == n_micro - 1);
    }
    AX_CHECK(ax_model_status(r->model));
    AX_CHECK(ax_coll_allreduce(r->grid, AX_AXIS_BATCH, &counts[1], 1, AX_DT_F64, AX_OP_SUM));
    AX_CHECK(ax_optim_step(r->optim, r->model, lr, gnorm));
    AX_CHECK(ax_model_status(r->model));
    *loss = counts[0] > 0 ? counts[1] / counts[0] : 0.0;
    *supervised = counts[0];
    *real = sums[1];
    return AX_OK;
}

/* After step `step`: a loss, gradient norm or validation loss that is NaN or infinite means the
 * run diverged. It stops there: the optimizer applied no update from a non-finite gradient
 * (ax_optim_step) and nothing more is written. */
static ax_status check_finite_step(const run_state *r, long step, double loss, double gnorm,
                                   double val) {
    if (isfinite(loss) && isfinite(gnorm) && isfinite(val)) return AX_OK;
    char what[160], v[48] = "";
    if (!isfinite(val)) snprintf(v, sizeof v, ", validation loss %g", val);
    snprintf(what, sizeof what, "loss %g, gradient norm %g%s", loss, gnorm, v);
    return diverged(r, step, what);
}

/* --init DIR: a step, run or checkpoint directory (ax_ckpt_resolve) */
static ax_status open_init(run_state *r) {
    char path[AX_CFG_STR_MAX + 64];
    AX_CHECK(ax_ckpt_resolve(r->cfg->init, "--init", path, sizeof path));
    AX_CHECK(ax_ckpt_open(path, &r->init_ck));
    AX_CHECK(ax_train_check_state(r->init_ck, AX_STATE_INIT));
    snprintf(r->init_step, sizeof r->init_step, "%s", ax_ckpt_path(r->init_ck));
    char manifest[AX_CFG_STR_MAX + 96], *bytes = NULL;
    size_t len = 0;
    snprintf(manifest, sizeof manifest, "%s/manifest.json", r->init_step);
    AX_CHECK(ax_read_file(manifest, &bytes, &len));
    r->init_sum = XXH3_64bits(bytes, len);
    free(bytes);
    r->init_max_pos = ax_model_position_limit(r->init_ck);
    ax_model_config shape;
    AX_CHECK(ax_model_config_from_ckpt(r->init_ck, &shape));
    return ax_train_shape_from_init(r->cfg, r->was_set, &shape, ax_ckpt_config(r->init_ck),
                                    r->init_step);
}

/* A resumed fine-tuning run keeps recording where it started (its first checkpoint's state). */
static ax_status carry_init(run_state *r, const ax_ckpt_t *ck) {
    const ax_json *state = ax_ckpt_state(ck);
    if (!r->cfg->init[0] || !ax_json_get(state, "init_ckpt")) return AX_OK;
    const char *step = "";
    AX_CHECK(ax_json_get_str(state, "init_ckpt", ax_ckpt_path(ck), &step));
    AX_CHECK(ax_json_get_hex64(state, "init_xxh3", ax_ckpt_path(ck), &r->init_sum));
    snprintf(r->init_step, sizeof r->init_step, "%s", step);
    int64_t x;
    const ax_json *mp = ax_json_get(state, "init_max_positions");
    if (mp && ax_json_int_in(mp, 1, 1 << 30, &x)) r->init_max_pos = (int)x;
    return AX_OK;
}

/* A cross-setting check that failed on a resumed run: the settings are the manifest's, with
 * the flags given here, so a value the user never typed is explained. */
static ax_status resumed_settings_hint(const ax_ckpt_t *ck, ax_status st) {
    if (st == AX_OK || !ck) return st;
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", ax_error_msg());
    ax_error_clear(); /* the first message wins: replace it with the fuller one */
    return ax_errorf(st,
                     "%s (resuming %s: its settings come from its manifest.json, and the flags "
                     "given here; a manifest edited by hand can be moved aside to resume from "
                     "the checkpoint before it)",
                     msg, ax_ckpt_path(ck));
}

/* The DP-SGD run in one line (rank 0), with the unit its guarantee covers. */
static void dp_summary(const run_state *r) {
    const ax_train_dp *d = &r->dp;
    char noise[96];
    if (d->target_epsilon > 0)
        snprintf(noise, sizeof noise, "%.6g (the least for epsilon %g over %lld steps)", d->sigma,
                 d->target_epsilon, (long long)r->cfg->steps);
    else
        snprintf(noise, sizeof noise, "%.6g", d->sigma);
    AX_INFO("DP-SGD: per-example clip %g, noise multiplier %s; Poisson sampling at rate %.6g of "
            "%lld examples (expected batch %.1f); the (epsilon, delta = %g) guarantee covers %s",
            d->clip, noise, d->q, (long long)d->examples, d->q * (double)d->examples, d->delta,
            d->unit);
}

/* Settings, resume merge and the grid: everything before any model memory exists. */
static ax_status prepare(run_state *r, ax_ckpt_t **ck, const uint8_t *was_set, long *first) {
    ax_train_config *cfg = r->cfg;
    /* the canonical spec goes into the manifest, so "hash" and "hash:k=4,h=13" resume alike */
    AX_CHECK(ax_goldfish_parse(cfg->goldfish, &r->goldfish));
    ax_goldfish_format(&r->goldfish, cfg->goldfish, sizeof cfg->goldfish);
    if (cfg->resume) {
        char latest[AX_CFG_STR_MAX + 64];
        AX_CHECK(ax_ckpt_find_latest(r->ckpt_dir, latest, sizeof latest));
        AX_CHECK(ax_ckpt_open(latest, ck));
        AX_CHECK(ax_train_check_state(*ck, AX_STATE_RESUME));
        AX_CHECK(
            ax_train_merge_resumed(cfg, was_set, ax_ckpt_config(*ck), latest, ax_ckpt_step(*ck)));
        *first = ax_ckpt_step(*ck);
        AX_CHECK(carry_init(r, *ck));
    } else {
        if (cfg->init[0])
            AX_CHECK(open_init(r));
        else
            AX_CHECK(ax_train_apply_preset(cfg, was_set));
        char probe[AX_CFG_STR_MAX + 64];
        if (ax_ckpt_find_latest(r->ckpt_dir, probe, sizeof probe) == AX_OK)
            return ax_errorf(AX_ERR_ARG,
                             "--out %s already holds checkpoints (%s); pass --resume "
                             "to continue that run, or choose a new --out",
                             cfg->out, probe);
        ax_error_clear(); /* find_latest's "no checkpoint" message is expected here */
    }
    AX_CHECK(resumed_settings_hint(*ck, ax_train_config_check(cfg)));
    AX_CHECK(resumed_settings_hint(*ck, ax_train_dp_check(cfg, was_set)));
    r->dp_on = ax_train_dp_on(cfg);
    if (r->dp_on && !*ck) cfg->grad_clip = 0; /* each example is clipped instead (manifest too) */
    /* on resume the mask spec is the manifest's (a FIXED setting) */
    ax_status gst = ax_goldfish_parse(cfg->goldfish, &r->goldfish);
    AX_CHECK(*ck ? ax_train_manifest_setting(gst, ax_ckpt_path(*ck)) : gst);
    int dims[4];
    AX_CHECK(ax_grid_parse(cfg->grid, dims));
    AX_CHECK(ax_grid_create(dims, &r->grid));
    r->rank0 = ax_grid_rank(r->grid) == 0;
    return AX_OK;
}

static ax_status start_files(run_state *r, ax_ckpt_t *ck, long first) {
    ax_status st = AX_OK;
    if (r->rank0) st = ax_mkdir_p(r->cfg->out);
    if (st == AX_OK && r->rank0 && ck) st = truncate_metrics(r->metrics_path, first);
    if (st == AX_OK && r->rank0 && !ck) {
        FILE *f = fopen(r->metrics_path, "w");
        if (!f)
            st = ax_errorf(AX_ERR_IO, "cannot create %s: %s", r->metrics_path, strerror(errno));
        else
            fclose(f);
    }
    return st;
}

/* Decided before every step and the same on every rank: a stop request on any rank (the
 * highest signal wins), or the limits of --exit-after-*. slowest_s: the longest step so far. */
static ax_status should_stop(run_state *r, long step, long first, double t_start, double slowest_s,
                             ax_train_result *res) {
    ax_train_config *c = r->cfg;
    double m = c->exit_after_minutes;
    /* [0]: 1 + signal of a stop request; [1]: this rank's clock says the next step would end
     * after --exit-after-minutes (ranks' clocks differ slightly: the max makes them agree) */
    double v[2] = {ax_stop_requested() ? 1.0 + ax_stop_signal() : 0.0,
                   m > 0 && ax_now() - t_start + slowest_s > m * 60.0};
    AX_CHECK(ax_coll_allreduce(r->grid, AX_AXIS_WORLD, v, 2, AX_DT_F64, AX_OP_MAX));
    if (v[0] > 0) {
        res->stop = AX_TRAIN_STOP_SIGNAL;
        res->stop_signal = (int)v[0] - 1;
    } else if (c->exit_after_steps > 0 && step - first >= c->exit_after_steps) {
        res->stop = AX_TRAIN_STOP_STEPS;
    } else if (v[1] > 0) {
        res->stop = AX_TRAIN_STOP_MINUTES;
    }
    return AX_OK;
}

/* Rank 0 holds the --out folder's lock for the whole run (train/run_lock.h), taken before
 * anything reads or writes the folder; every rank learns the outcome, so a refused run stops
 * on all of them. */
static ax_status take_run_lock(const ax_train_config *cfg, ax_run_lock **lock) {
    ax_grid_t *world = NULL;
    AX_CHECK(ax_grid_create_world(&world));
    ax_status st = AX_OK;
    if (ax_grid_rank(world) == 0) st = ax_run_lock_take(cfg->out, !cfg->resume, lock);
    st = ax_coll_agree(world, AX_AXIS_WORLD, st, "the --out lock");
    ax_grid_free(world);
    return st;
}

ax_status ax_train_run(ax_train_config *cfg, const uint8_t *was_set, ax_train_result *res) {
    return ax_train_run_scan(cfg, was_set, NULL, res);
}

ax_status ax_train_run_scan(ax_train_config *cfg, const uint8_t *was_set,
                            const ax_train_scan_hook *hook, ax_train_result *res) {
    run_state r = {.cfg = cfg, .was_set = was_set, .scan_prev_step = -1, .saved = -1};
    ax_ckpt_t *ck = NULL;
    ax_run_lock *lock = NULL;
    ax_status st = AX_OK;
    double t_start = ax_now();
    memset(res, 0, sizeof *res);
    ax_stop_catch(); /* a stop signal now only sets the flag polled below */
    snprintf(r.ckpt_dir, sizeof r.ckpt_dir, "%s/ckpt", cfg->out);
    snprintf(r.metrics_path, sizeof r.metrics_path, "%s/metrics.jsonl", cfg->out);

    AX_CHECK_GOTO(take_run_lock(cfg, &lock), out);
    AX_CHECK_GOTO(prepare(&r, &ck, was_set, &res->first_step), out);
    if (ax_train_flag_set(was_set, "stall-timeout")) ax_stall_set_timeout(cfg->stall_timeout);
    if (cfg->threads > 0) omp_set_num_threads((int)cfg->threads);
    if (cfg->scan_every > 0 && !hook)
        st = ax_errorf(AX_ERR_ARG, "--scan-every needs a scanner: run it with `axmem train` "
                                   "(library callers pass one to ax_train_run_scan)");
    r.hook = cfg->scan_every > 0 ? hook : NULL;
    if (st == AX_OK && r.hook) st = r.hook->prepare(r.hook->ctx, cfg); /* before any model */
    if (st == AX_OK) st = open_inputs(&r);
    if (st == AX_OK && r.dp_on) st = ax_train_dp_resolve(&r.dp, cfg, ax_loader_n_windows(r.loader));
    if (st == AX_OK) st = build(&r);
    AX_CHECK_GOTO(agree(r.grid, st), out);
    if (ck && r.dp_on) /* the accountant goes on from the checkpoint's */
        st = ax_train_dp_resume(&r.dp, ax_ckpt_state(ck), res->first_step, ax_ckpt_path(ck));
    if (st == AX_OK && ck)
        st = load_checkpoint(&r, ck);
    else if (st == AX_OK && r.init_ck) /* fine-tuning: the weights only; fresh AdamW moments */
        st = ax_model_load_blob(r.model, r.init_ck, "params",
                                ax_model_slab(r.model, AX_SLAB_PARAMS));
    else if (st == AX_OK)
        ax_model_init(r.model, (uint64_t)cfg->seed);
    if (st == AX_OK) st = start_files(&r, ck, res->first_step);
    AX_CHECK_GOTO(agree(r.grid, st), out);
    if (ck && r.rank0) AX_INFO("resumed from %s at step %ld", ax_ckpt_path(ck), res->first_step);
    if (r.init_ck && r.rank0) AX_INFO("fine-tuning from the weights of %s", r.init_step);
    if (r.dp_on && r.rank0) dp_summary(&r);
    if (ck && r.hook) { /* the previous scan, and the one a crash may have lost */
        double missing = 0;
        int m = 0;
        if (r.rank0) st = restore_scans(&r, res->first_step, &m), missing = m;
        AX_CHECK_GOTO(agree(r.grid, st), out);
        AX_CHECK_GOTO(ax_coll_allreduce(r.grid, AX_AXIS_WORLD, &missing, 1, AX_DT_F64, AX_OP_MAX),
                      out);
        if (missing > 0) AX_CHECK_GOTO(run_scan(&r, res->first_step), out);
    }
    ax_model_config mc = *ax_model_config_of(r.model);
    if (r.rank0)
        AX_INFO("model: %d layers, dim %d, %d heads, ffn %d, vocab %d: %.2fM parameters; "
                "%lld x %lld tokens per step; grid %s (%d ranks x %d threads)",
                mc.n_layers, mc.dim, mc.n_heads, mc.ffn, mc.vocab,
                (double)ax_model_n_params(r.model) / 1e6, (long long)cfg->batch,
                (long long)cfg->seq_len, ax_grid_spec(r.grid), ax_grid_size(r.grid),
                omp_get_max_threads());
    ax_overlap_trial_init(&r.trial, r.grid, ax_model_overlap(r.model), overlap_mode(cfg),
                          cfg->steps - res->first_step);
    if (r.rank0) overlap_summary(&r);

    ax_progress prog;
    ax_progress_begin(&prog, "train", res->first_step, cfg->steps);
    long step = res->first_step;
    double slowest = 0;
    r.saved = ck ? res->first_step : -1;
    for (; step < cfg->steps; step++) {
        AX_CHECK_GOTO(should_stop(&r, step, res->first_step, t_start, slowest, res), out);
        if (res->stop != AX_TRAIN_DONE) break;
        ax_comm_stats_reset(r.grid);
        double t0 = ax_now(), lr = ax_lr_at(&r.sched, step), loss, gnorm, supervised, real;
        AX_CHECK_GOTO(ax_overlap_trial_before(&r.trial), out);
        AX_CHECK_GOTO(train_step(&r, step, lr, &loss, &gnorm, &supervised, &real), out);
        if (r.dp_on) AX_CHECK_GOTO(ax_train_dp_account(&r.dp), out); /* every rank alike */
        double dt = ax_now() - t0;
        long tokens = (long)((r.dp_on ? r.dp.n : cfg->batch) * cfg->seq_len);
        double dropped = real > 0 ? 1.0 - supervised / real : 0.0; /* padding is not dropped */
        double val = -1;
        int last = step + 1 == cfg->steps;
        int validated =
            r.val_loader && (last || (cfg->val_every > 0 && (step + 1) % cfg->val_every == 0));
        if (validated) AX_CHECK_GOTO(validate(&r, &val), out);
        /* every rank judges the same all-reduced numbers; agree() below stops them together */
        st = check_finite_step(&r, step + 1, loss, gnorm, validated ? val : 0);
        if (st == AX_OK && r.rank0)
            st = append_metrics(&r, step + 1, loss, lr, gnorm, dt, tokens, dropped, val);
        if (st == AX_OK && r.rank0 && validated)
            AX_INFO("step %ld: validation loss %.4f", step + 1, val);
        AX_CHECK_GOTO(agree(r.grid, st), out);
        /* after the metrics line, which says what this step ran with */
        int settled;
        AX_CHECK_GOTO(ax_overlap_trial_after(&r.trial, dt, &settled), out);
        if (settled >= 0 && r.rank0) overlap_log(&r, (ax_axis)settled, "");
        res->final_loss = loss;
        if (r.rank0 && r.dp_on) {
            char note[48];
            snprintf(note, sizeof note, "eps %.3g", r.dp.epsilon);
            ax_progress_note(&prog, note);
        }
        if (r.rank0)
            ax_progress_update(&prog, step + 1, loss, (double)tokens / dt,
                               step + 1 == cfg->steps || (step + 1) % cfg->log_every == 0);
        /* a scan step is a checkpoint step: the scan reads the checkpoint */
        int scan = r.hook && (step + 1) % cfg->scan_every == 0;
        if ((scan || (cfg->ckpt_every > 0 && (step + 1) % cfg->ckpt_every == 0)) &&
            step + 1 < cfg->steps)
            AX_CHECK_GOTO(write_checkpoint(&r, step + 1), out);
        if (scan && step + 1 < cfg->steps) AX_CHECK_GOTO(run_scan(&r, step + 1), out);
        if (ax_now() - t0 > slowest) slowest = ax_now() - t0; /* with validation, checkpoint */
    }
    if (r.rank0) ax_progress_end(&prog);
    res->last_step = step;
    if (r.dp_on) {
        res->dp = 1;
        res->dp_epsilon = r.dp.epsilon, res->dp_delta = r.dp.delta;
        snprintf(res->dp_unit, sizeof res->dp_unit, "%s", r.dp.unit);
    }
    res->interrupted = step < cfg->steps;
    /* a new run stopped before its first step still leaves step 0, so --resume works */
    int write = r.saved != step && (step > res->first_step || res->interrupted);
    if (res->interrupted && r.rank0) {
        static const char *why[] = {"", "stop requested", "--exit-after-steps reached",
                                    "--exit-after-minutes reached"};
        AX_WARN("%s%s%s: %s at step %ld", why[res->stop],
                res->stop == AX_TRAIN_STOP_SIGNAL ? " by " : "",
                res->stop == AX_TRAIN_STOP_SIGNAL ? ax_stop_signal_name(res->stop_signal) : "",
                write ? "writing a checkpoint" : "stopping after the checkpoint", step);
    }
    if (write) AX_CHECK_GOTO(write_checkpoint(&r, step), out);
    if (r.hook && !res->interrupted && step > res->first_step && step % cfg->scan_every == 0)
        AX_CHECK_GOTO(run_scan(&r, step), out); /* the last step's, after its checkpoint */
out:
    ax_ckpt_free(ck);
    run_free(&r);
    ax_run_lock_release(lock); /* last: the folder is complete */
    return st;
}
