#include "lib/model/optim.h"
#include "lib/backend/ops.h"
#include "lib/model/model_internal.h"

#include <math.h>

struct ax_optim {
    ax_ctx *ctx; /* the model's: the moments live on its backend */
    ax_adamw_config cfg;
    int64_t n;
    float *m, *v;
    long t;
};

double ax_lr_at(const ax_lr_schedule *s, long step) {
    if (s->warmup > 0 && step < s->warmup) return s->lr * (double)(step + 1) / (double)s->warmup;
    long decay_steps = s->total - s->warmup;
    if (decay_steps <= 0) return s->lr;
    double progress = (double)(step - s->warmup) / (double)decay_steps;
    if (progress > 1.0) progress = 1.0;
    double floor = s->lr * s->min_lr_frac;
    return floor + 0.5 * (s->lr - floor) * (1.0 + cos(M_PI * progress));
}

ax_status ax_optim_create(ax_model_t *model, const ax_adamw_config *cfg, ax_optim_t **out) {
    *out = NULL;
    if (model->inference)
        return ax_errorf(AX_ERR_ARG, "ax_optim_create: the model was created for inference (no "
                                     "gradients to step with)");
    ax_ctx *ctx = ax_model_ctx(model);
    int64_t n_local = ax_model_n_local(model);
    ax_optim_t *o = ax_host_alloc(ctx, sizeof *o);
    if (!o) return ax_errorf(AX_ERR_NOMEM, "out of memory creating the optimizer");
    o->ctx = ctx;
    o->cfg = *cfg;
    o->n = n_local;
    /* the moments live beside the slabs, on the model's backend (zeroed by the allocator) */
    o->m = ax_dev_alloc(ctx, (size_t)n_local * sizeof(float));
    o->v = ax_dev_alloc(ctx, (size_t)n_local * sizeof(float));
    if (!o->m || !o->v) {
        ax_optim_free(o);
        return ax_errorf(AX_ERR_NOMEM, "out of memory for AdamW moments (%lld parameters)",
                         (long long)n_local);
    }
    *out = o;
    return AX_OK;
}

void ax_optim_free(ax_optim_t *o) {
    if (!o) return;
    ax_dev_free(o->ctx, o->m);
    ax_dev_free(o->ctx, o->v);
    ax_host_free(o->ctx, o);
}

ax_slab *ax_optim_slab(ax_optim_t *o, ax_optim_moment which) {
    return (ax_slab *)(which == AX_OPTIM_V ? o->v : o->m);
}

static ax_status read_moment(const ax_optim_t *o, const char *fn, const float *mom, float *host,
                             int64_t off, int64_t n) {
    if (!(off >= 0 && n >= 0 && off <= o->n && n <= o->n - off))
        return ax_errorf(AX_ERR_ARG, "%s: range [%lld, +%lld) leaves the moment of %lld floats", fn,
                         (long long)off, (long long)n, (long long)o->n);
    ax_copy(o->ctx, host, mom + off, (size_t)n * sizeof(float), AX_COPY_D2H);
    return ax_ctx_status(o->ctx);
}
ax_status ax_optim_read_m(const ax_optim_t *o, float *host, int64_t off, int64_t n) {
    return read_moment(o, "ax_optim_read_m", o->m, host, off, n);
}
ax_status ax_optim_read_v(const ax_optim_t *o, float *host, int64_t off, int64_t n) {
    return read_moment(o, "ax_optim_read_v", o->v, host, off, n);
}
long ax_optim_t_steps(const ax_optim_t *o) {
    return o->t;
}
void ax_optim_set_t_steps(ax_optim_t *o, long t) {
    o->t = t;
}

ax_status ax_optim_step(ax_optim_t *o, ax_model_t *model, double lr, double *gnorm) {
    float *p = model->params, *g = model->grads; /* the slabs, on the optimizer's backend */
    uint16_t *p16 = model->params16;
    double sumsq = 0;
    AX_CHECK(ax_model_grad_sumsq(model, &sumsq)); /* before any update: ranks stay equal */
    double norm = sqrt(sumsq);
    *gnorm = norm;
    /* every rank has the same norm: all of them leave the state as it was, and the caller stops */
    if (!isfinite(norm)) return AX_OK;
    float scale = 1.0f;
    if (o->cfg.grad_clip > 0 && norm > o->cfg.grad_clip) scale = (float)(o->cfg.grad_clip / norm);
    o->t++;
    for (int i = 0; i < ax_model_n_tensors(model); i++) {
        int64_t off, n;
        ax_model_local_range(model, i, &off, &n);
        float wd = ax_model_tensor_decays(model, i) ? o->cfg.weight_decay : 0.0f;
        /* the masters and, on a bf16 model with Z = 1, their bf16 copy the GEMMs read */
        ax_adamw_update(o->ctx, p + off, p16 ? p16 + off : NULL, g + off, o->m + off, o->v + off,
                        (long)n, (float)lr, o->cfg.beta1, o->cfg.beta2, o->cfg.eps, wd, scale,
                        o->t);
    }
    model_weights_changed(model); /* the blocks gathered over Z hold the old values */
    return AX_OK;
}

ax_status ax_optim_check_moments(const ax_optim_t *o, ax_model_t *model, const char *what) {
    int64_t most = 0;
    for (int i = 0; i < ax_model_n_tensors(model); i++) {
        int64_t off, n;
        ax_model_local_range(model, i, &off, &n);
        if (n > most) most = n;
    }
    float *host = most ? ax_host_alloc(o->ctx, (size_t)most * sizeof(float)) : NULL;
    if (most && !host) return ax_errorf(AX_ERR_NOMEM, "out of memory checking %s", what);
    ax_status st = AX_OK;
    for (int i = 0; st == AX_OK && i < ax_model_n_tensors(model); i++) {
        int64_t off, n;
        ax_model_local_range(model, i, &off, &n);
        st = ax_optim_read_v(o, host, off, n);
        for (int64_t j = 0; st == AX_OK && j < n; j++)
            if (host[j] < 0.0f) /* finiteness was checked as the blob was read */
                st = ax_errorf(AX_ERR_CORRUPT,
                               "%s: blob \"adam_v\" holds %g in tensor %s, but AdamW's second "
                               "moments are averages of squares, never negative; the checkpoint "
                               "is damaged: use an earlier one",
                               what, (double)host[j], ax_model_tensors(model)[i].name);
    }
    ax_host_free(o->ctx, host);
    return st;
}
