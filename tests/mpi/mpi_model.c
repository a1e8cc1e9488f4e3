/* The 4D-parallel model against the single-rank model, in one program: every rank also runs
 * the serial reference on the whole global batch (the models are tiny). For 10 steps, with
 * overlap on and off, the losses must agree (relative difference < 1e-4); at the first step
 * the residual stream entering every layer and every parameter's gradient must agree too.
 * Then a collective made to fail during a step (test hook) must fail the step and leave the
 * parameters alone. The same comparison (overlap on) then runs for a GPT-NeoX-shaped model
 * (LayerNorm, GELU, biases, parallel residual, partial rotary, untied) and a GPT-2-shaped one
 * (LayerNorm, tanh GELU, biases, learned positions, tied): docs/training.md "Architectures".
 * Usage: mpirun -np N mpi_model --grid DxXxYxZ. Verdict reduced over all ranks. */
#include "lib/dist/comm.h"
#include "lib/dist/grid.h"
#include "lib/dist/overlap.h"
#include "lib/core/log.h"
#include "lib/model/model.h"
#include "lib/dist/mpienv.h"
#include "lib/model/optim.h"
#include "plan/perfmodel.h"
#include "lib/core/rng.h"
#include "tests/mpi/mpi_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { B = 8, T = 16, STEPS = 10 };

/* the architecture under test: 0 Llama, 1 GPT-NeoX, 2 GPT-2; 3 and 4 are Llama and GPT-NeoX with
 * grouped-query attention (2 K/V heads for 4 query heads: on Y = 2 each rank holds one K/V
 * head and its two query heads) */
static int g_arch;
static void arch_context(FILE *f) {
    fprintf(f, " arch %d", g_arch);
}
static int arch_kind(void) { /* the architecture without GQA */
    return g_arch >= 3 ? g_arch - 3 : g_arch;
}

static ax_model_config cfg(void) {
    /* vocab 301: not divisible by Gy = 2, so the padded vocabulary shard is exercised */
    ax_model_config c = {.n_layers = 2,
                         .dim = 32,
                         .n_heads = 4,
                         .ffn = 48,
                         .vocab = 301,
                         .tie_embeddings = 1,
                         .rope_theta = 10000.0f,
                         .norm_eps = 1e-5f};
    int kind = arch_kind();
    if (kind) c.norm = AX_NORM_LAYER, c.bias = 1;
    if (kind == 1) /* 2 of the 8 dims of each head rotate */
        c.mlp = AX_MLP_GELU, c.parallel_residual = 1, c.rotary_dim = 2, c.tie_embeddings = 0;
    if (g_arch >= 3) c.n_kv_heads = 2;
    if (kind == 2) c.mlp = AX_MLP_GELU_TANH, c.pos = AX_POS_LEARNED, c.max_pos = T + 4;
    return c;
}

static void batch(int step, int32_t *in, int32_t *tg, uint8_t *mask) {
    for (int i = 0; i < B * T; i++) {
        in[i] = (int32_t)ax_rng_below(3, (uint64_t)step, (uint64_t)i, 301);
        tg[i] = (int32_t)ax_rng_below(4, (uint64_t)step, (uint64_t)i, 301);
        mask[i] = (uint8_t)(ax_rng_below(5, (uint64_t)step, (uint64_t)i, 5) != 0);
    }
}

static double max_abs(const float *x, long n) {
    double m = 0;
    for (long i = 0; i < n; i++) m = fmax(m, fabs(x[i]));
    return m;
}

/* the bytes counted per kind and axis equal the performance model's, exactly */
static void check_volume(ax_grid_t *g, const ax_model_config *c, int bl, int flags) {
    int dims[4];
    for (int a = 0; a < 4; a++) dims[a] = ax_grid_dim(g, (ax_axis)a);
    ax_step_volume want;
    ax_perfmodel_step_volume(c, dims, bl, T, 1, flags, &want);
    int batch_ranks = dims[AX_AXIS_DATA] * dims[AX_AXIS_Z]; /* + this driver's loss all-reduce */
    want.bytes[AX_COMM_ALLREDUCE][AX_AXIS_BATCH] +=
        ax_comm_volume(AX_COMM_ALLREDUCE, batch_ranks, 1, 8);
    want.calls[AX_COMM_ALLREDUCE][AX_AXIS_BATCH]++;
    ax_comm_stats got;
    ax_comm_stats_get(g, &got);
    for (int k = 0; k < AX_COMM_KINDS; k++)
        for (int a = 0; a < AX_AXIS_COUNT; a++)
            EXPECT(got.bytes[k][a] == want.bytes[k][a] && got.calls[k][a] == want.calls[k][a],
                   "%s over %s: counted %.0f bytes in %ld calls, the model says %.0f in %ld",
                   ax_comm_kind_name((ax_comm_kind)k), ax_axis_name((ax_axis)a), got.bytes[k][a],
                   got.calls[k][a], want.bytes[k][a], want.calls[k][a]);
}

/* Parameters written through ax_model_write_params reach the next forward on every grid (with
 * Gz > 1 the blocks gathered over Z must be refreshed): the same elementwise change on both
 * models (their layouts differ) keeps the losses equal. */
static void check_write_params(ax_model_t *ref, ax_model_t *par, int bl, int bc) {
    ax_model_t *ms[2] = {ref, par};
    for (int k = 0; k < 2; k++) {
        int64_t n = ax_model_n_local(ms[k]);
        float *p = malloc(sizeof(float) * (size_t)n);
        EXPECT(p && !ax_model_read_params(ms[k], p, 0, n), "read params: %s", ax_error_msg());
        for (int64_t i = 0; p && i < n; i++) p[i] *= 1.5f;
        EXPECT(p && !ax_model_write_params(ms[k], p, 0, n), "write params: %s", ax_error_msg());
        free(p);
    }
    int32_t in[B * T], tg[B * T];
    uint8_t mask[B * T];
    batch(99, in, tg, mask);
    double n_sup = 0;
    for (int i = 0; i < B * T; i++) n_sup += mask[i];
    double lr_ = ax_model_forward(ref, in, tg, mask, B, 1.0f, 0) / n_sup;
    long off = (long)bc * bl * T;
    double lp = ax_model_forward(par, in + off, tg + off, mask + off, bl, 1.0f, 0);
    ax_coll_allreduce(ax_model_grid(par), AX_AXIS_BATCH, &lp, 1, AX_DT_F64, AX_OP_SUM);
    lp /= n_sup;
    EXPECT(fabs(lp - lr_) <= 1e-4 * fabs(lr_), "after write_params: loss %.8f vs single-rank %.8f",
           lp, lr_);
}

/* par's parameters := ref's (the serial model's slab is the global layout). After training the
 * two have drifted apart: float noise in near-zero gradients, which AdamW scales to +-lr steps,
 * differs between the grids, by more than decoding's tolerance on some CPUs (an AVX2 EPYC: 1.8e-4
 * of the logits after 10 steps); the copy also leaves par's gathered blocks stale, as a step does.
 */
static void copy_params(ax_model_t *ref, ax_model_t *par) {
    const ax_tensor_info *ts = ax_model_tensors(ref);
    for (int i = 0; i < ax_model_n_tensors(ref); i++) {
        float *h = malloc((size_t)ts[i].numel * sizeof(float));
        EXPECT(h && !ax_model_read_params(ref, h, ts[i].offset, ts[i].numel), "read: %s",
               ax_error_msg());
        if (h) ax_model_scatter_tensor(par, i, h, ax_model_slab(par, AX_SLAB_PARAMS));
        free(h);
    }
    EXPECT(ax_model_status(par) == AX_OK, "copy params: %s", ax_error_msg());
}

/* KV-cached decoding on the grid: the same logits and greedy tokens as the serial model */
static void check_decode(ax_model_t *ref, ax_model_t *par, int bl, int bc) {
    int V = cfg().vocab, P = 6;
    if (ax_model_decode_begin(ref, B) || ax_model_decode_begin(par, bl)) {
        EXPECT(0, "decode_begin: %s", ax_error_msg());
        return;
    }
    float *fr = malloc(sizeof(float) * B * V), *fp = malloc(sizeof(float) * B * V);
    int32_t tok[B], ar[B], ap[B];
    for (int b = 0; b < B; b++) tok[b] = (int32_t)(7 * b + 3);
    for (int pos = 0; pos < P; pos++) {
        ax_model_decode_step(ref, tok, pos);
        ax_model_decode_full_logits(ref, fr);
        ax_model_decode_argmax(ref, ar);
        if (pos == 1) { /* par reads this token without logits: later steps must not notice */
            ax_model_decode_feed(par, tok + bc * bl, pos);
            EXPECT(ax_model_decode_argmax(par, ap) == AX_ERR_ARG, "argmax after a feed");
            ax_error_clear(); /* the refusal was the point */
            memcpy(tok, ar, sizeof tok);
            continue;
        }
        ax_model_decode_step(par, tok + bc * bl, pos);
        ax_model_decode_full_logits(par, fp);
        ax_model_decode_argmax(par, ap);
        double worst = 0, scale = max_abs(fr, (long)B * V);
        for (long i = 0; i < (long)bl * V; i++)
            worst = fmax(worst, fabs(fp[i] - fr[(long)bc * bl * V + i]));
        EXPECT(worst <= 1e-4 * scale, "decode pos %d logits differ: %g (scale %g)", pos, worst,
               scale);
        for (int b = 0; b < bl; b++)
            EXPECT(ap[b] == ar[bc * bl + b], "decode pos %d seq %d: greedy %d vs %d", pos, b, ap[b],
                   ar[bc * bl + b]);
        memcpy(tok, ar, sizeof tok); /* continue greedily */
    }
    free(fr), free(fp);
}

/* the losses of the parallel model per step, per recompute (0, 1) and overlap mode (index
 * AX_OVERLAP_*) */
static double g_losses[4][3][STEPS]; /* [recompute + 2 stream] */
static int g_recompute; /* run()'s model recomputes activations (ax_model_opts.recompute) */
static int g_stream;    /* ... streams layer weights over Z (ax_model_opts.stream_z) */

static void run(ax_grid_t *g, int overlap) {
    ax_model_config c = cfg();
    int parts = ax_grid_dim(g, AX_AXIS_BATCH), bl = B / parts, bc = ax_grid_coord(g, AX_AXIS_BATCH);
    int gx = ax_grid_dim(g, AX_AXIS_X), x = ax_grid_coord(g, AX_AXIS_X), Cx = c.dim / gx;
    ax_model_t *ref = NULL, *par = NULL;
    ax_optim_t *oref = NULL, *opar = NULL;
    ax_adamw_config oc = {0.9f, 0.95f, 1e-8f, 0.1f, 1.0f};
    ax_model_opts opts = {
        .overlap = overlap, .device = "cpu", .recompute = g_recompute, .stream_z = g_stream};
    if (ax_model_create(&c, B, T, &ref) || ax_model_create_ex(g, &c, bl, T, &opts, &par) ||
        ax_optim_create(ref, &oc, &oref) || ax_optim_create(par, &oc, &opar)) {
        EXPECT(0, "setup: %s", ax_error_msg());
        return;
    }
    ax_model_init(ref, 9);
    ax_model_init(par, 9);
    if (g_arch) mc_perturb(ref), mc_perturb(par);
    int biased = arch_kind() != 0;
    /* Decoding is compared on the initial weights for these: a key bias has an exactly zero
     * gradient (softmax ignores a constant added to every score), whose float noise AdamW turns
     * into +-lr steps that differ between the grids, so after training the models differ. */
    if (biased && !g_stream) check_decode(ref, par, bl, bc);
    int32_t in[B * T], tg[B * T];
    uint8_t mask[B * T];
    for (int step = 0; step < STEPS; step++) {
        batch(step, in, tg, mask);
        double n_sup = 0;
        for (int i = 0; i < B * T; i++) n_sup += mask[i];
        ax_model_zero_grad(ref);
        ax_model_zero_grad(par);
        double lr_ = ax_model_forward(ref, in, tg, mask, B, (float)(1 / n_sup), 1) / n_sup;
        ax_model_backward(ref);
        long off = (long)bc * bl * T;
        if (step == 1) ax_comm_stats_reset(g); /* step 0 also gathers gradients for the check */
        double lp =
            ax_model_forward(par, in + off, tg + off, mask + off, bl, (float)(1 / n_sup), 1);
        if (step == 0) /* the residual stream entering each layer: rows of my batch, cols of my x */
            for (int l = 0; l <= c.n_layers; l++) {
                float *rr = malloc(sizeof(float) * B * T * c.dim),
                      *rp = malloc(sizeof(float) * B * T * Cx);
                EXPECT(rr && rp && !ax_model_read_residual(ref, l, rr) &&
                           !ax_model_read_residual(par, l, rp),
                       "read the residual: %s", ax_error_msg());
                double worst = 0, scale = max_abs(rr, (long)B * T * c.dim);
                for (int i = 0; i < bl * T; i++)
                    for (int k = 0; k < Cx; k++)
                        worst = fmax(
                            worst, fabs(rp[(long)i * Cx + k] - rr[(off + i) * c.dim + x * Cx + k]));
                EXPECT(worst <= 1e-5 * scale,
                       "overlap=%d layer %d forward output differs: %g (scale %g)", overlap, l,
                       worst, scale);
                free(rr), free(rp);
            }
        ax_model_backward(par);
        EXPECT(ax_model_status(par) == AX_OK, "collective failed: %s", ax_error_msg());
        ax_coll_allreduce(g, AX_AXIS_BATCH, &lp, 1, AX_DT_F64, AX_OP_SUM);
        lp /= n_sup;
        g_losses[g_recompute + 2 * g_stream][overlap][step] = lp;
        EXPECT(fabs(lp - lr_) <= 1e-4 * fabs(lr_),
               "overlap=%d step %d loss %.8f vs single-rank %.8f", overlap, step, lp, lr_);
        if (step == 0) { /* every parameter's gradient, assembled in the global layout */
            const ax_tensor_info *ts = ax_model_tensors(ref);
            for (int i = 0; i < ax_model_n_tensors(ref); i++) {
                float *gl = malloc((size_t)ts[i].numel * sizeof(float));
                float *gr = malloc((size_t)ts[i].numel * sizeof(float));
                ax_model_gather_tensor(par, i, ax_model_slab(par, AX_SLAB_GRADS), gl);
                /* the serial model's slab is the global layout */
                EXPECT(!ax_model_read_grads(ref, gr, ts[i].offset, ts[i].numel), "read: %s",
                       ax_error_msg());
                double worst = 0, scale = max_abs(gr, (long)ts[i].numel);
                for (long k = 0; k < ts[i].numel; k++) worst = fmax(worst, fabs(gl[k] - gr[k]));
                EXPECT(worst <= 1e-4 * scale + 1e-9,
                       "overlap=%d gradient of %s differs: %g (scale %g)", overlap, ts[i].name,
                       worst, scale);
                free(gl), free(gr);
            }
        }
        double gn_ref = 0, gn_par = 0;
        EXPECT(ax_optim_step(oref, ref, 1e-2, &gn_ref) == AX_OK, "step: %s", ax_error_msg());
        EXPECT(ax_optim_step(opar, par, 1e-2, &gn_par) == AX_OK, "step: %s", ax_error_msg());
        if (step == 1) {
            /* the performance model counts every architecture's collectives (LayerNorm's two
             * statistics, GQA's narrower qkv, GELU's narrower up, biases' Z shards) */
            check_volume(g, &c, bl,
                         (g_recompute ? AX_PERF_RECOMPUTE : 0) | (g_stream ? AX_PERF_STREAM_Z : 0));
            /* the overlap is engaged: with a tensor-parallel axis the dX all-reduces (and Z's
             * reduce-scatters) are still in flight between dW chunks, so the progress step runs;
             * with overlap off every collective is blocking and it never does */
            ax_comm_stats st;
            ax_comm_stats_get(g, &st);
            int tp = ax_grid_size(g) > ax_grid_dim(g, AX_AXIS_DATA);
            if (overlap && tp)
                EXPECT(st.test_s > 0, "overlap on, grid %s: no progress between dW chunks",
                       ax_grid_spec(g));
            if (!overlap) EXPECT(st.test_s == 0, "overlap off: %g s of progress calls", st.test_s);
        }
    }
    int zs = g_stream && ax_grid_dim(g, AX_AXIS_Z) > 1;
    if (!biased && !zs) { /* the trained weights, on both: gathers over Z the next check */
        copy_params(ref, par);
        check_decode(ref, par, bl, bc);
    }
    if (zs) { /* decoding needs every layer at hand: refused, with the reason */
        EXPECT(ax_model_decode_begin(par, bl) == AX_ERR_ARG && strstr(ax_error_msg(), "stream"),
               "decoding a layer-streamed model: %s", ax_error_msg());
        ax_error_clear();
    }
    check_write_params(ref, par, bl, bc);
    ax_optim_free(oref), ax_optim_free(opar);
    ax_model_free(ref), ax_model_free(par);
}

/* Streaming over Z on 4 layers (so the backward re-gathers and slots change hands), with and
 * without recomputation, against the kept-blocks model: one micro-batch gives the same gradient
 * bits; two sum per micro-batch over Z (the kept-blocks schedule sums the micro-batches first),
 * so they agree to rounding. The counted bytes are the model's in every case (gathers in both
 * passes, reduce-scatters every micro-batch). */
static void stream_vs_kept(ax_grid_t *g, int n_micro, int recompute) {
    ax_model_config c = cfg();
    c.n_layers = 4;
    int parts = ax_grid_dim(g, AX_AXIS_BATCH), bl = B / parts, bc = ax_grid_coord(g, AX_AXIS_BATCH);
    int bm = bl / n_micro, dims[4];
    for (int a = 0; a < 4; a++) dims[a] = ax_grid_dim(g, (ax_axis)a);
    float *grads[2] = {NULL, NULL};
    long n = 0;
    for (int k = 0; k < 2; k++) {
        ax_model_opts o = {
            .overlap = AX_OVERLAP_FORCE, .device = "cpu", .recompute = recompute, .stream_z = k};
        ax_model_t *m = NULL;
        if (ax_model_create_ex(g, &c, bm, T, &o, &m) != AX_OK) {
            EXPECT(0, "setup: %s", ax_error_msg());
            return;
        }
        ax_model_init(m, 9);
        mc_perturb(m);
        int32_t in[B * T], tg[B * T];
        uint8_t mask[B * T];
        batch(3, in, tg, mask);
        ax_comm_stats_reset(g);
        ax_model_zero_grad(m);
        for (int mb = 0; mb < n_micro; mb++) {
            long off = ((long)bc * bl + (long)mb * bm) * T;
            ax_model_forward(m, in + off, tg + off, mask + off, bm, 1e-2f, 1);
            ax_model_backward_ex(m, mb == n_micro - 1);
        }
        EXPECT(ax_model_status(m) == AX_OK, "stream %d: %s", k, ax_error_msg());
        int flags = (k ? AX_PERF_STREAM_Z : 0) | (recompute ? AX_PERF_RECOMPUTE : 0);
        ax_step_volume want;
        ax_perfmodel_step_volume(&c, dims, bm, T, n_micro, flags, &want);
        ax_comm_stats got;
        ax_comm_stats_get(g, &got);
        for (int a = 0; a < AX_AXIS_COUNT; a++)
            for (int kind = 0; kind < AX_COMM_KINDS; kind++) {
                if (kind == AX_COMM_ALLREDUCE && a == AX_AXIS_WORLD)
                    continue; /* no optimizer step here: no gradient norm */
                EXPECT(got.bytes[kind][a] == want.bytes[kind][a] &&
                           got.calls[kind][a] == want.calls[kind][a],
                       "stream %d, %d micro-batches, recompute %d: %s over %s counted %.0f bytes "
                       "in %ld calls, the model %.0f in %ld",
                       k, n_micro, recompute, ax_comm_kind_name((ax_comm_kind)kind),
                       ax_axis_name((ax_axis)a), got.bytes[kind][a], got.calls[kind][a],
                       want.bytes[kind][a], want.calls[kind][a]);
            }
        n = (long)ax_model_n_local(m);
        grads[k] = malloc(sizeof(float) * (size_t)n);
        ax_model_read_grads(m, grads[k], 0, n);
        ax_model_free(m);
    }
    if (n_micro == 1)
        EXPECT(!memcmp(grads[0], grads[1], sizeof(float) * (size_t)n),
               "grid %s, recompute %d: streamed gradients differ from the kept blocks' bits",
               ax_grid_spec(g), recompute);
    double worst = 0, scale = max_abs(grads[0], n);
    for (long i = 0; i < n; i++) worst = fmax(worst, fabs(grads[0][i] - grads[1][i]));
    EXPECT(worst <= 1e-5 * scale, "%d micro-batches: streamed gradients differ by %g (scale %g)",
           n_micro, worst, scale);
    free(grads[0]), free(grads[1]);
}

/* Gradients reduced in bf16 (ax_model_opts.grad_comm_bf16) against the fp32 reduction of the
 * same step: where the grid reduces (D or Z > 1) every gradient is a bf16 value (its low 16
 * bits zero: the last reduction wrote it), they differ from fp32 by bf16 rounding only, the
 * bytes over Z and data halve and are what the performance model counts; elsewhere the bits
 * are fp32's. */
static void grad_comm_vs_fp32(ax_grid_t *g, int n_micro, int stream) {
    ax_model_config c = cfg();
    c.n_layers = 4;
    int parts = ax_grid_dim(g, AX_AXIS_BATCH), bl = B / parts, bc = ax_grid_coord(g, AX_AXIS_BATCH);
    int bm = bl / n_micro, dims[4];
    for (int a = 0; a < 4; a++) dims[a] = ax_grid_dim(g, (ax_axis)a);
    int reduces = dims[AX_AXIS_DATA] > 1 || dims[AX_AXIS_Z] > 1;
    stream = stream && dims[AX_AXIS_Z] > 1;
    float *grads[2] = {NULL, NULL};
    long n = 0;
    for (int k = 0; k < 2; k++) {
        ax_model_opts o = {
            .overlap = AX_OVERLAP_FORCE, .device = "cpu", .stream_z = stream, .grad_comm_bf16 = k};
        ax_model_t *m = NULL;
        if (ax_model_create_ex(g, &c, bm, T, &o, &m) != AX_OK) {
            EXPECT(0, "setup: %s", ax_error_msg());
            return;
        }
        /* the staging as allocated is what axmem plan adds to device memory for it */
        ax_machine mach = {.elem_bytes = 4,
                           .gemm_flops = 1e11,
                           .peak_flops = 1e11,
                           .bw = {1e10, 1e10},
                           .lat = {1e-6, 1e-6}};
        ax_plan_pred p32, p16;
        int pf = stream ? AX_PERF_STREAM_Z : 0;
        ax_perfmodel_predict(&c, &mach, dims, B, T, n_micro, AX_OVERLAP_OFF, pf, &p32);
        mach.grad_bf16 = 1;
        ax_perfmodel_predict(&c, &mach, dims, B, T, n_micro, AX_OVERLAP_OFF, pf, &p16);
        double staged = (double)ax_model_grad_comm_bytes(m);
        EXPECT(staged == (k && reduces ? p16.mem_device - p32.mem_device : 0),
               "grad-comm %d, stream %d: %.0f bytes of bf16 staging allocated, the plan %.0f", k,
               stream, staged, p16.mem_device - p32.mem_device);
        ax_model_init(m, 9);
        mc_perturb(m);
        int32_t in[B * T], tg[B * T];
        uint8_t mask[B * T];
        batch(5, in, tg, mask);
        ax_comm_stats_reset(g);
        ax_model_zero_grad(m);
        for (int mb = 0; mb < n_micro; mb++) {
            long off = ((long)bc * bl + (long)mb * bm) * T;
            ax_model_forward(m, in + off, tg + off, mask + off, bm, 1e-2f, 1);
            ax_model_backward_ex(m, mb == n_micro - 1);
        }
        EXPECT(ax_model_status(m) == AX_OK, "grad-comm %d: %s", k, ax_error_msg());
        int flags = (stream ? AX_PERF_STREAM_Z : 0) | (k ? AX_PERF_GRAD_BF16 : 0);
        ax_step_volume want;
        ax_perfmodel_step_volume(&c, dims, bm, T, n_micro, flags, &want);
        ax_comm_stats got;
        ax_comm_stats_get(g, &got);
        for (int a = 0; a < AX_AXIS_COUNT; a++)
            for (int kind = 0; kind < AX_COMM_KINDS; kind++) {
                if (kind == AX_COMM_ALLREDUCE && a == AX_AXIS_WORLD) continue; /* no norm */
                EXPECT(got.bytes[kind][a] == want.bytes[kind][a] &&
                           got.calls[kind][a] == want.calls[kind][a],
                       "grad-comm %s, stream %d, %d micro-batches: %s over %s counted %.0f "
                       "bytes in %ld calls, the model %.0f in %ld",
                       k ? "bf16" : "fp32", stream, n_micro, ax_comm_kind_name((ax_comm_kind)kind),
                       ax_axis_name((ax_axis)a), got.bytes[kind][a], got.calls[kind][a],
                       want.bytes[kind][a], want.calls[kind][a]);
            }
        n = (long)ax_model_n_local(m);
        grads[k] = malloc(sizeof(float) * (size_t)n);
        ax_model_read_grads(m, grads[k], 0, n);
        ax_model_free(m);
    }
    if (!reduces) {
        EXPECT(!memcmp(grads[0], grads[1], sizeof(float) * (size_t)n),
               "grid %s: --grad-comm bf16 changed gradients on a grid that reduces none",
               ax_grid_spec(g));
    } else {
        long wide = 0, differ = 0;
        double worst = 0, scale = max_abs(grads[0], n);
        for (long i = 0; i < n; i++) {
            uint32_t u;
            memcpy(&u, &grads[1][i], 4);
            wide += (u & 0xffffu) != 0;
            differ += grads[0][i] != grads[1][i];
            worst = fmax(worst, fabs(grads[0][i] - grads[1][i]));
        }
        /* (streamed over Z, the micro-batches' reduced shards are summed in fp32: only the data
         * all-reduce's output is bf16 then) */
        if (!(stream && n_micro > 1 && dims[AX_AXIS_DATA] == 1))
            EXPECT(wide == 0,
                   "grid %s, stream %d, %d micro-batches: %ld of %ld bf16-reduced gradients are "
                   "not bf16 values",
                   ax_grid_spec(g), stream, n_micro, wide, n);
        EXPECT(differ > 0, "grid %s: bf16 reduction gave fp32's bits everywhere", ax_grid_spec(g));
        /* a few roundings of 2^-9 each, relative to the elements summed (bounded by the scale) */
        EXPECT(worst <= 0.02 * scale,
               "grid %s, stream %d, %d micro-batches: bf16-reduced "
               "gradients differ by %g (scale %g)",
               ax_grid_spec(g), stream, n_micro, worst, scale);
    }
    free(grads[0]), free(grads[1]);
}

/* One step of the model side of train/train_run.c's train_step. */
static ax_status train_step(ax_model_t *m, ax_optim_t *o, const int32_t *in, const int32_t *tg,
                            const uint8_t *mask, int bl) {
    ax_model_zero_grad(m);
    ax_model_forward(m, in, tg, mask, bl, 1.0f / (float)(B * T), 1);
    ax_model_backward(m);
    AX_CHECK(ax_model_status(m));
    double gnorm = 0;
    AX_CHECK(ax_optim_step(o, m, 1e-2, &gnorm));
    return ax_model_status(m);
}

/* A collective that fails on every rank during a step (ax_comm_inject_failure) makes the step
 * return the error on every rank with the parameters untouched, and the next step works: the
 * data-parallel gradient all-reduce (blocking), the gradient-norm all-reduce, and with Z > 1 a
 * non-blocking ZeRO reduce-scatter in flight behind the backward (overlap on). */
static void failing_steps(ax_grid_t *g) {
    ax_model_config c = cfg();
    int parts = ax_grid_dim(g, AX_AXIS_BATCH), bl = B / parts, bc = ax_grid_coord(g, AX_AXIS_BATCH);
    ax_model_t *m = NULL;
    ax_optim_t *o = NULL;
    ax_adamw_config oc = {0.9f, 0.95f, 1e-8f, 0.1f, 1.0f};
    if (ax_model_create_on(g, &c, bl, T, 1, &m) || ax_optim_create(m, &oc, &o)) {
        EXPECT(0, "setup: %s", ax_error_msg());
        return;
    }
    ax_model_init(m, 9);
    int32_t in[B * T], tg[B * T];
    uint8_t mask[B * T];
    batch(0, in, tg, mask);
    long off = (long)bc * bl * T;
    size_t bytes = (size_t)ax_model_n_local(m) * sizeof(float);
    float *before = malloc(bytes), *now = malloc(bytes);
    long n_local = ax_model_n_local(m);
    struct {
        ax_comm_kind kind;
        ax_axis axis;
        const char *want;
    } cases[] = {
        {AX_COMM_ALLREDUCE, AX_AXIS_DATA, "allreduce(sum, f32) over the data axis failed"},
        {AX_COMM_ALLREDUCE, AX_AXIS_WORLD, "allreduce(sum, f64) over the world axis failed"},
        {AX_COMM_REDUCE_SCATTER, AX_AXIS_Z, "reduce-scatter over the z axis failed"},
    };
    for (int k = 0; k < 3; k++) {
        if (cases[k].axis == AX_AXIS_Z && ax_grid_dim(g, AX_AXIS_Z) == 1) continue;
        ax_model_read_params(m, before, 0, n_local);
        ax_comm_inject_failure(g, cases[k].kind, cases[k].axis, 0);
        ax_status st = train_step(m, o, in + off, tg + off, mask + off, bl);
        ax_comm_inject_failure(NULL, cases[k].kind, cases[k].axis, -1);
        EXPECT(st == AX_ERR_MPI, "%s: a failed collective returned %d", cases[k].want, (int)st);
        EXPECT(st == AX_OK || strstr(ax_error_msg(), cases[k].want), "message '%s' lacks '%s'",
               ax_error_msg(), cases[k].want);
        ax_model_read_params(m, now, 0, n_local);
        EXPECT(!memcmp(before, now, bytes), "%s: the failed step changed parameters",
               cases[k].want);
        ax_model_clear_status(m); /* handled: the model and the message forget it */
        ax_error_clear();
        st = train_step(m, o, in + off, tg + off, mask + off, bl);
        EXPECT(st == AX_OK, "the step after '%s': %s", cases[k].want, ax_error_msg());
        ax_model_read_params(m, now, 0, n_local);
        EXPECT(memcmp(before, now, bytes), "the step after '%s' changed nothing", cases[k].want);
    }
    free(before);
    free(now);
    ax_optim_free(o);
    ax_model_free(m);
}

int main(int argc, char **argv) {
    ax_log_init();
    mc_context = arch_context;
    const char *spec;
    ax_grid_t *g = mc_start(&argc, &argv, "mpi_model", &spec);
    if (!g) return 1;
    run(g, AX_OVERLAP_FORCE);
    run(g, AX_OVERLAP_OFF);
    /* the overlapped schedule changes when bytes move, not what is computed: forcing it gives
     * the losses of the blocking schedule bit for bit */
    for (int s = 0; s < STEPS; s++)
        EXPECT(g_losses[0][AX_OVERLAP_FORCE][s] == g_losses[0][AX_OVERLAP_OFF][s],
               "grid %s step %d: loss %.17g with overlap forced, %.17g without", spec, s,
               g_losses[0][AX_OVERLAP_FORCE][s], g_losses[0][AX_OVERLAP_OFF][s]);
    /* recomputing activations repeats the same ops on the same inputs: the same losses, bit
     * for bit, on every grid (and its extra all-reduces are what the model counts) */
    g_recompute = 1;
    run(g, AX_OVERLAP_FORCE);
    for (int s = 0; s < STEPS; s++)
        EXPECT(g_losses[1][AX_OVERLAP_FORCE][s] == g_losses[0][AX_OVERLAP_FORCE][s],
               "grid %s step %d: loss %.17g recomputing activations, %.17g keeping them", spec, s,
               g_losses[1][AX_OVERLAP_FORCE][s], g_losses[0][AX_OVERLAP_FORCE][s]);
    g_recompute = 0;
    /* layer weights streamed over Z: one micro-batch gives the same bits (the first
     * micro-batch's reduce-scatter lands in the slab as the kept-blocks one does), also with
     * recomputation on top */
    for (g_stream = 1, g_recompute = 0; g_recompute <= 1; g_recompute++) {
        run(g, AX_OVERLAP_FORCE);
        for (int s = 0; s < STEPS; s++)
            EXPECT(g_losses[g_recompute + 2][AX_OVERLAP_FORCE][s] ==
                       g_losses[0][AX_OVERLAP_FORCE][s],
                   "grid %s step %d: loss %.17g streaming over Z (recompute %d), %.17g not", spec,
                   s, g_losses[g_recompute + 2][AX_OVERLAP_FORCE][s], g_recompute,
                   g_losses[0][AX_OVERLAP_FORCE][s]);
    }
    g_stream = 0, g_recompute = 0;
    for (int nm = 1; nm <= 2; nm++)
        for (int rc = 0; rc <= 1; rc++) stream_vs_kept(g, nm, rc);
    for (int nm = 1; nm <= 2; nm++)
        for (int st = 0; st <= 1; st++) grad_comm_vs_fp32(g, nm, st);
    failing_steps(g);
    /* the other architectures; NeoX (parallel residual) and Llama with GQA also recomputing */
    for (g_arch = 1; g_arch <= 4; g_arch++) {
        run(g, 1);
        if (g_arch == 1 || g_arch == 3) g_recompute = 1, run(g, 1), g_recompute = 0;
    }
    return mc_finish(g, "mpi_model", spec);
}
