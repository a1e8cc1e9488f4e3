/* `axmem plan` as a library call: the grids of a device count ranked by predicted step time,
 * and a model shape read from a checkpoint. */
#include "plan/plan_run.h"
#include "lib/ckpt/ckpt.h"
#include "lib/model/model_io.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_pred(const void *a, const void *b) {
    const ax_plan_pred *x = a, *y = b;
    if (x->step_s != y->step_s) return x->step_s < y->step_s ? -1 : 1;
    /* ties (every grid of 1 device): the smaller Z, then Y, X, D first: a stable order */
    for (int i = 3; i >= 0; i--)
        if (x->dims[i] != y->dims[i]) return x->dims[i] - y->dims[i];
    return 0;
}

static void reject(ax_plan_result *r, const int dims[4], const char *why) {
    ax_plan_reject *j = &r->rejected[r->n_rejected++];
    memcpy(j->dims, dims, sizeof j->dims);
    snprintf(j->reason, sizeof j->reason, "%s", why);
}

/* whether a mode (AX_PLAN_RECOMPUTE_*: off, on, auto) allows a setting (0 or 1) */
static int allows(int mode, int on) {
    return mode == AX_PLAN_RECOMPUTE_AUTO || mode == on;
}

/* for each way of running the mode allows (recomputation; with Gz > 1 layer-streamed weights),
 * the fewest micro-batches that fit memory (the per-rank batch's divisors, smallest first); the
 * fastest of those */
static void plan_grid(const ax_model_config *c, const ax_plan_machine *pm, const int dims[4],
                      int global_batch, int T, int overlap, int recompute, int z_gather,
                      ax_plan_result *r) {
    char why[256];
    int parts = dims[AX_AXIS_DATA] * dims[AX_AXIS_Z];
    if (ax_model_config_check_grid(c, dims) != AX_OK) {
        snprintf(why, sizeof why, "shape: %s", ax_error_msg());
        ax_error_clear();
        reject(r, dims, why);
        return;
    }
    if (global_batch % parts) {
        snprintf(why, sizeof why, "batch: %d sequences do not split over Gdata x Gz = %d",
                 global_batch, parts);
        reject(r, dims, why);
        return;
    }
    int per_rank = global_batch / parts, found = 0;
    ax_plan_pred p, best = {0}, smallest = {0};
    for (int flags = 0; flags < 4; flags++) {
        int rc = (flags & AX_PERF_RECOMPUTE) != 0, st = (flags & AX_PERF_STREAM_Z) != 0;
        int no_z = dims[AX_AXIS_Z] == 1; /* nothing to stream: any z_gather mode runs as is */
        if ((st && no_z) || !allows(recompute, rc) || (!no_z && !allows(z_gather, st))) continue;
        for (int nm = 1; nm <= per_rank; nm++) {
            if (per_rank % nm) continue;
            if (ax_perfmodel_predict(c, &pm->m, dims, global_batch, T, nm, overlap, flags, &p) !=
                AX_OK) {
                snprintf(why, sizeof why, "%s", ax_error_msg());
                ax_error_clear();
                reject(r, dims, why);
                return;
            }
            if (p.fits) {
                if (!found || p.step_s < best.step_s) best = p;
                found = 1;
                break;
            }
            if (!smallest.step_s || p.mem_total < smallest.mem_total) smallest = p;
        }
    }
    if (found) {
        r->best[r->n_best++] = best;
        return;
    }
    snprintf(why, sizeof why,
             "memory: %.2f GiB per device even with micro-batches of 1 sequence%s%s (state "
             "%.2f, gathered %.2f, activations %.2f, device buffers %.2f) > %.2f GiB",
             smallest.mem_total / 1073741824.0,
             smallest.recompute ? ", recomputed activations" : "",
             smallest.stream_z ? ", layer-streamed weights" : "", smallest.mem_state / 1073741824.0,
             smallest.mem_gathered / 1073741824.0, smallest.mem_acts / 1073741824.0,
             smallest.mem_device / 1073741824.0, pm->m.mem_bytes / 1073741824.0);
    reject(r, dims, why);
}

/* every grid D x X x Y x Z = devices, D slowest and Y fastest, into dims (NULL: counted only) */
static int grids(int devices, int (*dims)[4]) {
    int n = 0;
    for (int d = 1; d <= devices; d++)
        for (int x = 1; devices % d == 0 && x <= devices / d; x++)
            for (int y = 1; (devices / d) % x == 0 && y <= devices / d / x; y++)
                if ((devices / d / x) % y == 0) {
                    if (dims) memcpy(dims[n], (int[4]){d, x, y, devices / d / x / y}, sizeof *dims);
                    n++;
                }
    return n;
}

ax_status ax_plan_rank(const ax_model_config *c, const ax_plan_machine *pm, int devices,
                       int global_batch, int T, int overlap, int recompute, int z_gather,
                       ax_plan_result *out) {
    *out = (ax_plan_result){0};
    if (recompute < AX_PLAN_RECOMPUTE_OFF || recompute > AX_PLAN_RECOMPUTE_AUTO ||
        z_gather < AX_PLAN_RECOMPUTE_OFF || z_gather > AX_PLAN_RECOMPUTE_AUTO)
        return ax_errorf(AX_ERR_ARG,
                         "recompute mode %d, z-gather mode %d: use off (0), on (1) or auto (2)",
                         recompute, z_gather);
    if (devices < 1 || global_batch < 1 || T < 1)
        return ax_errorf(AX_ERR_ARG,
                         "--devices %d, --global-batch %d and --seq-len %d must be >= 1", devices,
                         global_batch, T);
    AX_CHECK(ax_model_config_check(c));
    int n = grids(devices, NULL);
    int(*dims)[4] = malloc(sizeof *dims * (size_t)n);
    out->best = calloc((size_t)n, sizeof *out->best);
    out->rejected = calloc((size_t)n, sizeof *out->rejected);
    if (!dims || !out->best || !out->rejected) {
        free(dims);
        ax_plan_result_free(out);
        return ax_errorf(AX_ERR_NOMEM, "out of memory planning %d grids", n);
    }
    out->n_grids = grids(devices, dims);
    for (int i = 0; i < n; i++)
        plan_grid(c, pm, dims[i], global_batch, T, overlap, recompute, z_gather, out);
    free(dims);
    qsort(out->best, (size_t)out->n_best, sizeof *out->best, cmp_pred);
    return AX_OK;
}

void ax_plan_result_free(ax_plan_result *r) {
    free(r->best), free(r->rejected);
    *r = (ax_plan_result){0};
}

ax_status ax_plan_shape_from_ckpt(const char *dir, int heads_flag_set, ax_model_config *c) {
    char step[4096];
    ax_ckpt_t *ck = NULL;
    AX_CHECK(ax_ckpt_resolve(dir, "--ckpt", step, sizeof step));
    AX_CHECK(ax_ckpt_open(step, &ck));
    int L = 0, tie = 1;
    for (int i = 0; i < ax_ckpt_n_tensors(ck); i++) {
        const ax_tensor_info *t = ax_ckpt_tensor(ck, i);
        const char *dot = strrchr(t->name, '.');
        if (!strcmp(t->name, "wte")) c->vocab = (int)t->shape[0], c->dim = (int)t->shape[1];
        if (!strcmp(t->name, "lm_head")) tie = 0;
        if (dot && !strcmp(dot, ".wqkv")) L++;
        if (dot && !strcmp(dot, ".w_up")) c->ffn = (int)(t->shape[0] / 2);
    }
    c->n_layers = L, c->tie_embeddings = tie;
    /* a checkpoint axmem wrote or imported names its whole configuration (architecture and
     * kv-heads included): the tensor-table guesses above are for older ones */
    ax_model_config whole;
    if (ax_model_config_from_ckpt(ck, &whole) == AX_OK) {
        int flag_heads = c->n_heads;
        *c = whole;
        if (heads_flag_set) c->n_heads = flag_heads;
        ax_ckpt_free(ck);
        return AX_OK;
    }
    ax_error_clear();
    int64_t h = 0;
    const ax_json *hv = ax_json_get(ax_ckpt_config(ck), "heads");
    if (!heads_flag_set && hv && ax_json_int_in(hv, 1, 4096, &h) && h > 0) c->n_heads = (int)h;
    ax_ckpt_free(ck);
    if (!heads_flag_set && h == 0)
        return ax_errorf(AX_ERR_ARG, "--ckpt %s: its config does not name the heads; pass --heads",
                         dir);
    return AX_OK;
}
