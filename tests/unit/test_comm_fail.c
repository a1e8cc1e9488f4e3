/* A failed collective inside a training step is an error returned to the caller, never a
 * silently skipped or half-applied update (issue 9 item 6). The failures come from the test-only
 * hook ax_comm_inject_failure, which acts before the size-1 shortcut, so a serial grid suffices:
 *   - the data-parallel gradient all-reduce (end of ax_model_backward_ex, reported through
 *     ax_model_status), and
 *   - the gradient-norm all-reduce (ax_model_grad_sumsq inside ax_optim_step),
 * each with overlap on and off; then the same through `axmem train`'s loop (ax_train_run). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/core/fsutil.h"
#include "lib/core/rng.h"
#include "lib/dist/comm.h"
#include "lib/model/model.h"
#include "lib/model/optim.h"
#include "tests/support/synth.h"
#include "train/train_run.h"

enum { B = 2, T = 8, N = B * T };

static ax_model_config tiny_cfg(void) {
    ax_model_config c = {.n_layers = 2,
                         .dim = 16,
                         .n_heads = 2,
                         .ffn = 24,
                         .vocab = 300,
                         .tie_embeddings = 0,
                         .rope_theta = 10000.0f,
                         .norm_eps = 1e-5f};
    return c;
}

typedef struct {
    ax_grid_t *g;
    ax_model_t *m;
    ax_optim_t *o;
    int32_t in[N], tg[N];
    uint8_t mask[N];
} rig;

static void rig_up(rig *r, int overlap) {
    ax_model_config c = tiny_cfg();
    ax_adamw_config oc = {0.9f, 0.95f, 1e-8f, 0.1f, 1.0f};
    cr_assert_eq(ax_grid_create_serial(&r->g), AX_OK);
    cr_assert_eq(ax_model_create_on(r->g, &c, B, T, overlap, &r->m), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(ax_optim_create(r->m, &oc, &r->o), AX_OK, "%s", ax_error_msg());
    ax_model_init(r->m, 7);
    for (int i = 0; i < N; i++) {
        r->in[i] = (int32_t)ax_rng_below(3, 0, (uint64_t)i, (uint64_t)c.vocab);
        r->tg[i] = (int32_t)ax_rng_below(3, 1, (uint64_t)i, (uint64_t)c.vocab);
        r->mask[i] = 1;
    }
}

static void rig_down(rig *r) {
    ax_comm_inject_failure(NULL, AX_COMM_ALLREDUCE, AX_AXIS_DATA, -1);
    ax_optim_free(r->o);
    ax_model_free(r->m);
    ax_grid_free(r->g);
}

/* The model side of train/train_run.c's train_step: gradients, the model's status, the optimizer
 * step, the status again. */
static ax_status step(rig *r) {
    ax_model_zero_grad(r->m);
    ax_model_forward(r->m, r->in, r->tg, r->mask, B, 1.0f / N, 1);
    ax_model_backward_ex(r->m, 1);
    AX_CHECK(ax_model_status(r->m));
    double gnorm = 0;
    AX_CHECK(ax_optim_step(r->o, r->m, 1e-2, &gnorm));
    return ax_model_status(r->m);
}

/* copies of everything an optimizer step writes */
typedef struct {
    float *p, *m, *v;
    long t;
    size_t bytes;
} snapshot;

static snapshot snap(const rig *r) {
    snapshot s;
    long n = ax_model_n_local(r->m);
    s.bytes = (size_t)n * sizeof(float);
    s.p = malloc(s.bytes), s.m = malloc(s.bytes), s.v = malloc(s.bytes);
    cr_assert(s.p && s.m && s.v);
    cr_assert_eq(ax_model_read_params(r->m, s.p, 0, n), AX_OK);
    cr_assert_eq(ax_optim_read_m(r->o, s.m, 0, n), AX_OK);
    cr_assert_eq(ax_optim_read_v(r->o, s.v, 0, n), AX_OK);
    s.t = ax_optim_t_steps(r->o);
    return s;
}

static void unsnap(snapshot *s);

/* the optimizer's state now equals the snapshot, bit for bit */
static int same(const rig *r, const snapshot *s) {
    snapshot now = snap(r);
    int eq = !memcmp(s->p, now.p, s->bytes) && !memcmp(s->m, now.m, s->bytes) &&
             !memcmp(s->v, now.v, s->bytes) && s->t == now.t;
    unsnap(&now);
    return eq;
}

static void unsnap(snapshot *s) {
    free(s->p), free(s->m), free(s->v);
}

/* One good step, then a step whose `axis` all-reduce fails: the error and its message reach the
 * caller and nothing of the update is applied; then a step without the failure works again. */
static void fail_once(int overlap, ax_axis axis, const char *want) {
    rig r;
    rig_up(&r, overlap);
    cr_assert_eq(step(&r), AX_OK, "%s", ax_error_msg());
    snapshot before = snap(&r);

    ax_comm_inject_failure(r.g, AX_COMM_ALLREDUCE, axis, 0);
    ax_error_clear(); /* the message must come from this step */
    ax_status st = step(&r);
    cr_assert_eq(st, AX_ERR_MPI, "overlap=%d: a failed %s all-reduce returned %d", overlap,
                 ax_axis_name(axis), (int)st);
    cr_assert(strstr(ax_error_msg(), want), "overlap=%d: message '%s' lacks '%s'", overlap,
              ax_error_msg(), want);
    cr_assert(same(&r, &before), "overlap=%d: the failed step changed parameters or moments",
              overlap);

    /* the failure is reported once; a caller that handled it goes on */
    ax_model_clear_status(r.m);
    ax_error_clear();
    cr_assert_eq(step(&r), AX_OK, "overlap=%d: the step after the failure: %s", overlap,
                 ax_error_msg());
    cr_assert(!same(&r, &before), "overlap=%d: the step after the failure changed nothing",
              overlap);
    cr_assert_eq(ax_optim_t_steps(r.o), before.t + 1);
    unsnap(&before);
    rig_down(&r);
}

Test(comm_fail, data_parallel_gradient_allreduce) {
    fail_once(1, AX_AXIS_DATA, "allreduce(sum, f32) over the data axis failed: injected");
    fail_once(0, AX_AXIS_DATA, "allreduce(sum, f32) over the data axis failed: injected");
}

Test(comm_fail, grad_norm_allreduce) {
    fail_once(1, AX_AXIS_WORLD, "allreduce(sum, f64) over the world axis failed: injected");
    fail_once(0, AX_AXIS_WORLD, "allreduce(sum, f64) over the world axis failed: injected");
}

/* The hook itself: counts only its kind and axis, fires once, then is gone; a non-blocking
 * call fails at issue and leaves no request in flight. */
Test(comm_fail, hook_counts_fires_once_and_disarms) {
    ax_grid_t *g = NULL;
    cr_assert_eq(ax_grid_create_serial(&g), AX_OK);
    float a[4] = {1, 2, 3, 4}, b[4];
    ax_comm_inject_failure(g, AX_COMM_ALLGATHER, AX_AXIS_Z, 1);
    cr_assert_eq(ax_coll_allreduce(g, AX_AXIS_Z, a, 4, AX_DT_F32, AX_OP_SUM), AX_OK);
    cr_assert_eq(ax_coll_allgather(g, AX_AXIS_Y, a, 4, b, AX_DT_F32), AX_OK);
    cr_assert_eq(ax_coll_allgather(g, AX_AXIS_Z, a, 4, b, AX_DT_F32), AX_OK); /* call 1: skipped */
    ax_req q;
    cr_assert_eq(ax_coll_iallgather(g, AX_AXIS_Z, a, 4, b, AX_DT_F32, &q), AX_ERR_MPI);
    cr_assert(strstr(ax_error_msg(), "iallgather(f32) over the z axis failed"), "%s",
              ax_error_msg());
    cr_assert_eq(q.active, 0);
    cr_assert_eq(ax_coll_allgather(g, AX_AXIS_Z, a, 4, b, AX_DT_F32), AX_OK); /* disarmed */
    /* another grid is not affected by a hook armed for g */
    ax_grid_t *h = NULL;
    cr_assert_eq(ax_grid_create_serial(&h), AX_OK);
    ax_comm_inject_failure(g, AX_COMM_BCAST, AX_AXIS_X, 0);
    cr_assert_eq(ax_coll_bcast(h, AX_AXIS_X, a, 4, AX_DT_F32, 0), AX_OK);
    cr_assert_eq(ax_coll_bcast(g, AX_AXIS_X, a, 4, AX_DT_F32, 0), AX_ERR_MPI);
    ax_grid_free(h);
    ax_grid_free(g);
}

/* Through the training loop: the failed gradient all-reduce of step 1 ends the run with the
 * collective's error; no metrics line and no checkpoint claim a step that was not taken. */
Test(comm_fail, train_run_returns_the_error, .timeout = 60) {
    char dir[256], data[300], out[300], path[400];
    snprintf(dir, sizeof dir, "/tmp/axmem-comm-fail-%d", (int)getpid());
    ax_rm_rf(dir);
    cr_assert_eq(ax_mkdir_p(dir), AX_OK);
    snprintf(data, sizeof data, "%s/d.axd", dir);
    snprintf(out, sizeof out, "%s/run", dir);
    ax_memscan_synth_opts so = {.vocab = 257,
                                .n_docs = 40,
                                .doc_len_min = 40,
                                .doc_len_max = 80,
                                .alphabet = 60,
                                .seed = 5};
    cr_assert_eq(ax_memscan_synth_write(data, &so, NULL, NULL), AX_OK, "%s", ax_error_msg());
    ax_train_config c;
    cr_assert_eq(ax_cfg_set_defaults(&ax_train_table, &c), AX_OK);
    snprintf(c.data, sizeof c.data, "%s", data);
    snprintf(c.out, sizeof c.out, "%s", out);
    c.seq_len = 16;
    c.batch = 2;
    c.steps = 3;
    c.warmup = 1;
    c.threads = 1;
    c.log_every = 1000;
    ax_train_result res;
    ax_comm_inject_failure(NULL, AX_COMM_ALLREDUCE, AX_AXIS_DATA, 0);
    ax_error_clear();
    ax_status st = ax_train_run(&c, NULL, &res);
    ax_comm_inject_failure(NULL, AX_COMM_ALLREDUCE, AX_AXIS_DATA, -1);
    cr_assert_eq(st, AX_ERR_MPI, "train returned %d: %s", (int)st, ax_error_msg());
    cr_assert(strstr(ax_error_msg(), "allreduce(sum, f32) over the data axis failed"), "%s",
              ax_error_msg());
    snprintf(path, sizeof path, "%s/metrics.jsonl", out);
    char *text = NULL;
    size_t n = 0;
    if (ax_read_file(path, &text, &n) == AX_OK) cr_assert_eq(n, 0, "metrics written: %s", text);
    free(text);
    snprintf(path, sizeof path, "%s/ckpt/step-000001", out);
    cr_assert(!ax_path_exists(path), "a checkpoint of the failed step exists");
    ax_rm_rf(dir);
}
