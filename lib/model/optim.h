/* AdamW with global-norm gradient clipping, and the warm-up + cosine learning-rate schedule.
 * The moments m and v are slabs with the model's offset table. */
#pragma once
#include <stdint.h>
#include "lib/model/model.h"
#include "lib/core/status.h"

typedef struct {
    double lr;          /* peak */
    double min_lr_frac; /* cosine decays to lr * min_lr_frac */
    long warmup;        /* linear warm-up steps */
    long total;         /* steps in the run (cosine reaches its floor here) */
} ax_lr_schedule;

/* learning rate for 0-based step */
double ax_lr_at(const ax_lr_schedule *s, long step);

typedef struct {
    float beta1, beta2, eps, weight_decay;
    float grad_clip; /* max global L2 norm; <= 0 disables clipping */
} ax_adamw_config;

typedef struct ax_optim ax_optim_t;
/* AdamW moments for the model's local slabs, on the model's backend (the model outlives it) */
ax_status ax_optim_create(ax_model_t *model, const ax_adamw_config *cfg, ax_optim_t **out);
void ax_optim_free(ax_optim_t *o);
/* The moments live in the model's backend memory (lib/model/model.h "the local slabs"): the
 * handle of moment m or v [n_local] for the checkpoint functions (ax_model_gather_tensor,
 * ax_model_load_blob), and copies to the host of their [off, off + n) (AX_ERR_ARG when the
 * range leaves [0, n_local); tensor i at ax_model_local_range). */
typedef enum { AX_OPTIM_M, AX_OPTIM_V } ax_optim_moment;
ax_slab *ax_optim_slab(ax_optim_t *o, ax_optim_moment which);
ax_status ax_optim_read_m(const ax_optim_t *o, float *host, int64_t off, int64_t n);
ax_status ax_optim_read_v(const ax_optim_t *o, float *host, int64_t off, int64_t n);
/* Updates applied so far. Training applies one per optimizer step (micro-batches accumulate
 * inside a step), so a checkpoint at step s records s: the bias corrections depend on it. */
long ax_optim_t_steps(const ax_optim_t *o);
void ax_optim_set_t_steps(ax_optim_t *o, long t); /* after loading moments from a checkpoint */
/* One update of this rank's parameter shards from their gradients; *gnorm: the global
 * gradient norm before clipping (collective). Weight decay only where ax_model_tensor_decays.
 * A failed collective is returned (AX_ERR_MPI with its message) and nothing is updated: the
 * caller stops, it never silently skips a step. A norm that is not finite (NaN or infinite
 * gradients) updates nothing either (parameters, moments and t stay as they were; the same on
 * every rank, as the norm is) and returns AX_OK with *gnorm set: the caller stops there. */
ax_status ax_optim_step(ax_optim_t *o, ax_model_t *model, double lr, double *gnorm);
/* After loading moments from a checkpoint: AX_ERR_CORRUPT naming `what` (the checkpoint) and
 * the tensor when this rank's second moments hold a negative value (finiteness is checked as
 * blobs are read). Reads each tensor's v to the host once. */
ax_status ax_optim_check_moments(const ax_optim_t *o, ax_model_t *model, const char *what);
