/* Mirrors the collectives of lib/model (model_step.c, block.c, tp_linear.c, ax_model_grad_sumsq)
 * call by call. Keep the two in step: the MPI driver compares them on every grid. */
#include "plan/perfmodel.h"
#include "lib/model/model_io.h"

#include <string.h>

typedef struct {
    const int *dims;
    ax_step_volume *v; /* the phase being filled */
} acc;

static void add(acc *a, ax_comm_kind kind, ax_axis axis, long n, int elem) {
    int p = axis == AX_AXIS_BATCH   ? a->dims[AX_AXIS_DATA] * a->dims[AX_AXIS_Z]
            : axis == AX_AXIS_WORLD ? a->dims[0] * a->dims[1] * a->dims[2] * a->dims[3]
                                    : a->dims[axis];
    a->v->bytes[kind][axis] += ax_comm_volume(kind, p, n, elem);
    a->v->calls[kind][axis]++;
}

/* the ZeRO shard of a block of `block` elements */
static long shard(long block, int gz) {
    return (block + gz - 1) / gz;
}

/* Per tensor of the configuration's table (model_table.c: the same list model.c allocates), in
 * model order: its Z all-gather or reduce-scatter (kind), or only its shard counted (n_local). */
typedef struct {
    acc *a;
    int gz;
    int kind;  /* -1: count n_local only */
    int which; /* tensors counted: -2 every one, -1 the global ones, l >= 0 layer l's */
    int elem;  /* bytes an element on the wire */
    long n_local;
} per_tensor;

static void tensor_cb(void *u, int layer, int64_t block) {
    per_tensor *t = u;
    if (t->which != -2 && (t->which == -1 ? layer >= 0 : layer != t->which)) return;
    long sh = shard((long)block, t->gz);
    t->n_local += sh;
    if (t->kind >= 0) add(t->a, (ax_comm_kind)t->kind, AX_AXIS_Z, sh, t->elem);
}

/* the Z collective `kind` of every tensor in `which` (per_tensor.which), elem bytes an element */
static void z_tensors(const ax_model_config *c, acc *a, int gz, int kind, int which, int elem) {
    per_tensor pt = {a, gz, kind, which, elem, 0};
    ax_model_rank_blocks(c, a->dims, tensor_cb, &pt);
}

/* streamed weights (model_stream.c): a layer is gathered when its slot (l % 2) does not hold it;
 * returns 1 when it is */
static int stream_gather(int slot_layer[2], int l) {
    if (slot_layer[l % 2] == l) return 0;
    slot_layer[l % 2] = l;
    return 1;
}

/* dst += k x src (every layer has the same tensors: one layer's volume, counted k times) */
static void add_scaled(ax_step_volume *dst, const ax_step_volume *src, long k) {
    for (int kind = 0; kind < AX_COMM_KINDS; kind++)
        for (int x = 0; x < AX_AXIS_COUNT; x++) {
            dst->bytes[kind][x] += (double)k * src->bytes[kind][x];
            dst->calls[kind][x] += k * src->calls[kind][x];
        }
}

/* a norm's statistics over X: RMSNorm one row sum of squares; LayerNorm the row sum and then
 * the squared deviations (forward), both backward row sums in one call */
static void norm_fwd(acc *a, const ax_model_config *c, long N) {
    add(a, AX_COMM_ALLREDUCE, AX_AXIS_X, N, 4);
    if (c->norm == AX_NORM_LAYER) add(a, AX_COMM_ALLREDUCE, AX_AXIS_X, N, 4);
}
static void norm_bwd(acc *a, const ax_model_config *c, long N) {
    add(a, AX_COMM_ALLREDUCE, AX_AXIS_X, c->norm == AX_NORM_LAYER ? 2 * N : N, 4);
}

void ax_perfmodel_step_phases(const ax_model_config *c, const int dims[4], int B, int T,
                              int n_micro, int flags, ax_step_volume phase[3]) {
    int recompute = flags & AX_PERF_RECOMPUTE, stream = (flags & AX_PERF_STREAM_Z) != 0;
    int ge = (flags & AX_PERF_GRAD_BF16) ? 2 : 4; /* the gradient reductions' element bytes */
    for (int i = 0; i < 3; i++) phase[i] = (ax_step_volume){0};
    acc a = {dims, &phase[2]};
    int gx = dims[AX_AXIS_X], gy = dims[AX_AXIS_Y], gz = dims[AX_AXIS_Z];
    long N = (long)B * T, Cx = c->dim / gx, Cy = c->dim / gy, Fy = c->ffn / gy;
    long Vl = (c->vocab + gy - 1) / gy, L = c->n_layers;
    /* this rank's qkv row: Cy query columns and Ky of each of k and v (grouped-query attention:
     * fewer); the MLP's up rows (SwiGLU: gate and up, GELU: one) */
    long Ky = (long)(c->n_kv_heads ? c->n_kv_heads : c->n_heads) / gy * (c->dim / c->n_heads);
    long Uy = (c->mlp == AX_MLP_SWIGLU ? 2L : 1L) * Fy;
    per_tensor pt = {&a, gz, -1, -2, 4, 0};
    ax_model_rank_blocks(c, dims, tensor_cb, &pt); /* n_local */
    long n_local = pt.n_local;
    stream = stream && gz > 1;

    /* weight all-gathers over Z: once per step, when the parameters changed (streamed: the
     * global tensors so, the layers below) */
    if (gz > 1) z_tensors(c, &a, gz, AX_COMM_ALLGATHER, stream ? -1 : -2, 4);
    int slot_layer[2] = {-1, -1};                  /* streamed: the step starts with new weights */
    ax_step_volume layer_ag = {0}, layer_rs = {0}; /* one layer's gathers and reduce-scatters */
    if (stream) {
        acc one = {dims, &layer_ag};
        z_tensors(c, &one, gz, AX_COMM_ALLGATHER, 0, 4);
        one.v = &layer_rs;
        z_tensors(c, &one, gz, AX_COMM_REDUCE_SCATTER, 0, ge);
    }
    for (int mb = 0; mb < n_micro; mb++) {
        if (stream) { /* forward: layers 0..L-1; backward: L-2..0 (the top one is in place) */
            long gathers = 0;
            for (long l = 0; l < L; l++) gathers += stream_gather(slot_layer, (int)l);
            for (long l = L - 2; l >= 0; l--) gathers += stream_gather(slot_layer, (int)l);
            add_scaled(&phase[2], &layer_ag, gathers);
            add_scaled(&phase[2], &layer_rs, L);
        }
        a.v = &phase[0];                                  /* forward */
        add(&a, AX_COMM_ALLREDUCE, AX_AXIS_Y, N * Cx, 4); /* embedding */
        for (long l = 0; l < L; l++) {
            norm_fwd(&a, c, N);                                          /* norm 1 */
            add(&a, AX_COMM_ALLREDUCE, AX_AXIS_X, N * (Cy + 2 * Ky), 4); /* qkv */
            add(&a, AX_COMM_ALLREDUCE, AX_AXIS_Y, N * Cx, 4);            /* out-proj */
            norm_fwd(&a, c, N);                                          /* norm 2 */
            add(&a, AX_COMM_ALLREDUCE, AX_AXIS_X, N * Uy, 4);            /* up */
            add(&a, AX_COMM_ALLREDUCE, AX_AXIS_Y, N * Cx, 4);            /* down */
        }
        norm_fwd(&a, c, N);                               /* final norm */
        add(&a, AX_COMM_ALLREDUCE, AX_AXIS_X, N * Vl, 4); /* LM head */
        add(&a, AX_COMM_ALLREDUCE, AX_AXIS_Y, N, 4);      /* cross-entropy row max */
        add(&a, AX_COMM_ALLREDUCE, AX_AXIS_Y, 2 * N, 4);  /* cross-entropy sums */
        a.v = &phase[1];                                  /* backward */
        add(&a, AX_COMM_ALLREDUCE, AX_AXIS_Y, N * Cx, 4); /* LM head dX */
        norm_bwd(&a, c, N);                               /* final norm */
        for (long l = L - 1; l >= 0; l--) {
            if (recompute && l < L - 1) { /* the layer's forward but the down projection, again:
                                           * blocking all-reduces, counted with the forward's */
                a.v = &phase[0];
                norm_fwd(&a, c, N);
                add(&a, AX_COMM_ALLREDUCE, AX_AXIS_X, N * (Cy + 2 * Ky), 4);
                add(&a, AX_COMM_ALLREDUCE, AX_AXIS_Y, N * Cx, 4);
                norm_fwd(&a, c, N);
                add(&a, AX_COMM_ALLREDUCE, AX_AXIS_X, N * Uy, 4);
                a.v = &phase[1];
            }
            add(&a, AX_COMM_ALLREDUCE, AX_AXIS_X, N * Fy, 4); /* down dX */
            add(&a, AX_COMM_ALLREDUCE, AX_AXIS_Y, N * Cx, 4); /* up dX */
            norm_bwd(&a, c, N);                               /* norm 2 */
            add(&a, AX_COMM_ALLREDUCE, AX_AXIS_X, N * Cy, 4); /* out-proj dX */
            add(&a, AX_COMM_ALLREDUCE, AX_AXIS_Y, N * Cx, 4); /* qkv dX */
            norm_bwd(&a, c, N);                               /* norm 1 */
        }
    }
    /* gradients: reduce-scatter over Z per tensor, then one all-reduce over data */
    a.v = &phase[2];
    if (gz > 1) z_tensors(c, &a, gz, AX_COMM_REDUCE_SCATTER, stream ? -1 : -2, ge);
    add(&a, AX_COMM_ALLREDUCE, AX_AXIS_DATA, n_local, ge);
    add(&a, AX_COMM_ALLREDUCE, AX_AXIS_WORLD, 1, 8); /* gradient norm */
}

void ax_perfmodel_step_volume(const ax_model_config *c, const int dims[4], int B, int T,
                              int n_micro, int flags, ax_step_volume *out) {
    ax_step_volume ph[3];
    ax_perfmodel_step_phases(c, dims, B, T, n_micro, flags, ph);
    *out = (ax_step_volume){0};
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < AX_COMM_KINDS; k++)
            for (int x = 0; x < AX_AXIS_COUNT; x++) {
                out->bytes[k][x] += ph[i].bytes[k][x];
                out->calls[k][x] += ph[i].calls[k][x];
            }
}
