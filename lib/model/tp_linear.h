/* The two tensor-parallel linear kinds (private to lib/model). A linear out = in W^T with
 * W [n outputs, k inputs] stores on each rank an n/G x k/G block of W, split over two of the
 * grid's axes, and of that block a 1/Gz shard (ZeRO-3 over Z), all-gathered before use
 * (tp_gather_*) and whose gradient is reduce-scattered back (tp_grad_sync_*).
 *
 * Column-parallel (AxoNN's "normal" layer; tp_kind TP_NORMAL, and TP_VOCAB for the LM head):
 * outputs split over Y, inputs over X. With Gx = 1 it is Megatron's column-parallel linear.
 *   forward   out [N, n/Gy] = in [N, k/Gx] W^T             then all-reduce over X
 *   backward  din [N, k/Gx] = dout W                        then all-reduce over Y (OAR)
 *             dW += dout^T in                               (the Z reduce-scatter comes later)
 * Row-parallel (AxoNN's "transposed" layer; TP_TRANSPOSED): the same with X and Y swapped,
 * inputs over Y, outputs over X; with Gx = 1 Megatron's row-parallel linear.
 *   forward   out [N, n/Gx] = in [N, k/Gy] W^T             then all-reduce over Y
 *   backward  din [N, k/Gy] = dout W                        then all-reduce over X (OAR)
 * A column-parallel layer's output is split the way a row-parallel layer's input is, so QKV
 * feeds the out-projection and the MLP's up projection its down projection without re-layout.
 *
 * OAR: the input gradient's all-reduce runs while the dW GEMM computes in chunks (lib/dist/
 * overlap.h), giving every other collective in flight progress too; with overlap off every
 * collective is blocking and the results are the same bits.
 *
 * in16 / dout16: that operand is bf16 storage with padded rows (a GEMM-only activation, see
 * layer_acts); otherwise fp32 [N, cols]. din is written, not accumulated. In a decoding step
 * (m->decoding) a forward multiplies the tensor's packed copy when it has one. */
#pragma once
#include "lib/model/model_internal.h"

void tp_col_forward(ax_model_t *m, int t, float *out, const void *in, int in16, int N);
void tp_row_forward(ax_model_t *m, int t, float *out, const void *in, int in16, int N);
void tp_col_backward(ax_model_t *m, int t, float *din, const void *dout, int dout16, const void *in,
                     int in16, int N);
void tp_row_backward(ax_model_t *m, int t, float *din, const void *dout, int dout16, const void *in,
                     int in16, int N);

/* Tensor t's block all-gathered over Z from the shards (OAG: issued a layer ahead). */
void tp_gather_begin(ax_model_t *m, int t);
void tp_gather_end(ax_model_t *m, int t);
/* Tensor t's gradient block reduce-scattered over Z into its shard of the slab (ORS: behind the
 * layers below), or into recv; nothing to do when Gz = 1 (the block is the slab). */
void tp_grad_sync_begin(ax_model_t *m, int t);
void tp_grad_sync_begin_to(ax_model_t *m, int t, float *recv);
void tp_grad_sync_end(ax_model_t *m, int t);
