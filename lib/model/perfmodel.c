/* Mirrors the collectives of model_step.c / model_linear.c / ax_model_grad_sumsq call by call.
 * Keep the two in step: the MPI driver compares them on every grid. */
#include "lib/model/perfmodel.h"

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

void ax_perfmodel_step_phases(const ax_model_config *c, const int dims[4], int B, int T,
                              int n_micro, ax_step_volume phase[3]) {
    for (int i = 0; i < 3; i++) phase[i] = (ax_step_volume){0};
    acc a = {dims, &phase[2]};
    int gx = dims[AX_AXIS_X], gy = dims[AX_AXIS_Y], gz = dims[AX_AXIS_Z];
    long N = (long)B * T, Cx = c->dim / gx, Cy = c->dim / gy, Fy = c->ffn / gy;
    long Vl = (c->vocab + gy - 1) / gy, L = c->n_layers;
    /* block sizes per tensor, in model order */
    long vocab_block = Vl * Cx, vec_block = Cx;
    long layer_blocks[6] = {vec_block, 3 * Cy * Cx, Cx * Cy, vec_block, 2 * Fy * Cx, Cx * Fy};
    long n_local = shard(vocab_block, gz) * (c->tie_embeddings ? 1 : 2) + shard(vec_block, gz);
    for (int s = 0; s < 6; s++) n_local += L * shard(layer_blocks[s], gz);

    /* weight all-gathers over Z: once per step, when the parameters changed */
    if (gz > 1) {
        add(&a, AX_COMM_ALLGATHER, AX_AXIS_Z, shard(vocab_block, gz), 4);
        for (long l = 0; l < L; l++)
            for (int s = 0; s < 6; s++)
                add(&a, AX_COMM_ALLGATHER, AX_AXIS_Z, shard(layer_blocks[s], gz), 4);
        add(&a, AX_COMM_ALLGATHER, AX_AXIS_Z, shard(vec_block, gz), 4);
        if (!c->tie_embeddings) add(&a, AX_COMM_ALLGATHER, AX_AXIS_Z, shard(vocab_block, gz), 4);
    }
    for (int mb = 0; mb < n_micro; mb++) {
        a.v = &phase[0];                                  /* forward */
        add(&a, AX_COMM_ALLREDUCE, AX_AXIS_Y, N * Cx, 4); /* embedding */
        for (long l = 0; l < L; l++) {
            add(&a, AX_COMM_ALLREDUCE, AX_AXIS_X, N, 4);          /* norm 1 */
            add(&a, AX_COMM_ALLREDUCE, AX_AXIS_X, N * 3 * Cy, 4); /* qkv */
            add(&a, AX_COMM_ALLREDUCE, AX_AXIS_Y, N * Cx, 4);     /* out-proj */
            add(&a, AX_COMM_ALLREDUCE, AX_AXIS_X, N, 4);          /* norm 2 */
            add(&a, AX_COMM_ALLREDUCE, AX_AXIS_X, N * 2 * Fy, 4); /* up */
            add(&a, AX_COMM_ALLREDUCE, AX_AXIS_Y, N * Cx, 4);     /* down */
        }
        add(&a, AX_COMM_ALLREDUCE, AX_AXIS_X, N, 4);      /* final norm */
        add(&a, AX_COMM_ALLREDUCE, AX_AXIS_X, N * Vl, 4); /* LM head */
        add(&a, AX_COMM_ALLREDUCE, AX_AXIS_Y, N, 4);      /* cross-entropy row max */
        add(&a, AX_COMM_ALLREDUCE, AX_AXIS_Y, 2 * N, 4);  /* cross-entropy sums */
        a.v = &phase[1];                                  /* backward */
        add(&a, AX_COMM_ALLREDUCE, AX_AXIS_Y, N * Cx, 4); /* LM head dX */
        add(&a, AX_COMM_ALLREDUCE, AX_AXIS_X, N, 4);      /* final norm */
        for (long l = 0; l < L; l++) {
            add(&a, AX_COMM_ALLREDUCE, AX_AXIS_X, N * Fy, 4); /* down dX */
            add(&a, AX_COMM_ALLREDUCE, AX_AXIS_Y, N * Cx, 4); /* up dX */
            add(&a, AX_COMM_ALLREDUCE, AX_AXIS_X, N, 4);      /* norm 2 */
            add(&a, AX_COMM_ALLREDUCE, AX_AXIS_X, N * Cy, 4); /* out-proj dX */
            add(&a, AX_COMM_ALLREDUCE, AX_AXIS_Y, N * Cx, 4); /* qkv dX */
            add(&a, AX_COMM_ALLREDUCE, AX_AXIS_X, N, 4);      /* norm 1 */
        }
    }
    /* gradients: reduce-scatter over Z per tensor, then one all-reduce over data */
    a.v = &phase[2];
    if (gz > 1) {
        add(&a, AX_COMM_REDUCE_SCATTER, AX_AXIS_Z, shard(vec_block, gz), 4);
        if (!c->tie_embeddings)
            add(&a, AX_COMM_REDUCE_SCATTER, AX_AXIS_Z, shard(vocab_block, gz), 4);
        for (long l = 0; l < L; l++)
            for (int s = 0; s < 6; s++)
                add(&a, AX_COMM_REDUCE_SCATTER, AX_AXIS_Z, shard(layer_blocks[s], gz), 4);
        add(&a, AX_COMM_REDUCE_SCATTER, AX_AXIS_Z, shard(vocab_block, gz), 4);
    }
    add(&a, AX_COMM_ALLREDUCE, AX_AXIS_DATA, n_local, 4);
    add(&a, AX_COMM_ALLREDUCE, AX_AXIS_WORLD, 1, 8); /* gradient norm */
}

void ax_perfmodel_step_volume(const ax_model_config *c, const int dims[4], int B, int T,
                              int n_micro, ax_step_volume *out) {
    ax_step_volume ph[3];
    ax_perfmodel_step_phases(c, dims, B, T, n_micro, ph);
    *out = (ax_step_volume){0};
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < AX_COMM_KINDS; k++)
            for (int x = 0; x < AX_AXIS_COUNT; x++) {
                out->bytes[k][x] += ph[i].bytes[k][x];
                out->calls[k][x] += ph[i].calls[k][x];
            }
}
