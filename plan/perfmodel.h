/* The performance model's communication volumes: bytes each rank sends per optimizer step,
 * per collective kind and grid axis, for the 4D-parallel model (lib/model*.c). Built from the
 * same per-call formula the counters use (ax_comm_volume), so a measured step must match it
 * exactly; tests/mpi/mpi_model.c checks that on every grid.
 *
 * Scope: what the model issues in one step of n_micro micro-batches of B sequences per rank:
 * weight all-gathers over Z (once per step), forward and backward all-reduces, gradient
 * reduce-scatters over Z and the data all-reduce (last micro-batch), and the gradient-norm
 * all-reduce of the optimizer. The training loop adds two 8-byte all-reduces over BATCH per
 * step (supervised count and loss). */
#pragma once
#include "lib/dist/comm.h"
#include "lib/model/model.h"

#include <stddef.h>

typedef struct {
    double bytes[AX_COMM_KINDS][AX_AXIS_COUNT];
    long calls[AX_COMM_KINDS][AX_AXIS_COUNT];
} ax_step_volume;

/* dims = {D, X, Y, Z}; the shape must fit the grid (ax_model_config_check_grid). flags: how
 * the model runs (ax_model_opts), 0 or a sum of: AX_PERF_RECOMPUTE, activation recomputation
 * (the backward repeats every layer's forward all-reduces but the down projection's, not the
 * top layer's; blocking, so they count in phase[0]); AX_PERF_STREAM_Z, layer weights streamed
 * over Z (each layer gathered before its forward and its backward unless its slot still holds
 * it, its gradients reduce-scattered every micro-batch; phase[2]); AX_PERF_GRAD_BF16,
 * gradients reduced in bf16 (the Z reduce-scatters and the data all-reduce at 2 bytes an
 * element). */
enum { AX_PERF_RECOMPUTE = 1, AX_PERF_STREAM_Z = 2, AX_PERF_GRAD_BF16 = 4 };
void ax_perfmodel_step_volume(const ax_model_config *c, const int dims[4], int B, int T,
                              int n_micro, int flags, ax_step_volume *out);
/* The same volumes split by when they happen in the step (the overlap model needs it):
 * phase[0] forward all-reduces (blocking), phase[1] backward all-reduces (every micro-batch),
 * phase[2] the rest (Z all-gathers, Z reduce-scatters, data and gradient-norm all-reduces). The
 * three sum to ax_perfmodel_step_volume's output. */
void ax_perfmodel_step_phases(const ax_model_config *c, const int dims[4], int B, int T,
                              int n_micro, int flags, ax_step_volume phase[3]);

/* ---- step-time prediction (axmem plan; docs/plan.md) ----
 * A machine profile: what one device computes and holds, and the two network levels. */
enum { AX_LEVEL_NODE = 0, AX_LEVEL_NET = 1, AX_LEVELS = 2 };
typedef struct {
    char name[64];
    double gemm_flops;    /* sustained dense GEMM FLOP/s per device on large GEMMs */
    double gemm_half_dim; /* local GEMM dimension at which that rate halves (0: no penalty) */
    double peak_flops;    /* advertised peak per device, for MFU (0: gemm_flops) */
    double mem_bytes;     /* usable device memory */
    double mem_bw; /* bytes/s the step's memory-bound passes move on a device (the rate of AdamW's
                    * seven streams); 0: those passes are not priced */
    int devices_per_node;  /* ranks placed per node, in world-rank order */
    double bw[AX_LEVELS];  /* bytes/s per device: within a node, across nodes */
    double lat[AX_LEVELS]; /* seconds per ring step (a message) */
    int elem_bytes;        /* bytes per activation and communicated element: 4 fp32, 2 bf16 */
    /* 1: price axmem's CUDA engine in a bf16 run instead of elem_bytes throughout: fp32
     * activations, gathered blocks and collectives, but the GEMM-only activations (norm and MLP
     * outputs) in bf16, plus the bf16 weight cache, the GEMM staging slots and the blocked
     * attention's workspace (axmem plan --engine axmem on a GPU profile). 0: an engine whose
     * activations, gathered blocks and collectives all take elem_bytes (the CPU engine at 4;
     * at 2, an all-bf16 engine such as AxoNN's: --engine bf16) */
    int axmem_cuda;
    /* 1: the engine reduces gradients in bf16 (train --grad-comm bf16: the Z reduce-scatters and
     * the data all-reduce at 2 bytes an element, plus their bf16 staging); only where
     * collectives are otherwise 4 bytes (an elem_bytes 2 engine moves everything in bf16) */
    int grad_bf16;
    double overlap; /* fraction of the overlappable communication that hides, 0..1 */
    /* what moves a collective's bytes, for the per-axis overlap rule (ax_overlap_decide) */
    int transport;          /* AX_TRANSPORT_*: 0 (the default) a device transport */
    int cores_per_node;     /* 0: not known (the ranks x threads test does not apply) */
    int threads_per_device; /* threads a rank computes with (0 counts as 1) */
} ax_machine;
enum {
    AX_TRANSPORT_NCCL = 0, /* NCCL/RCCL: copy engines and links move device memory by themselves */
    AX_TRANSPORT_HOST = 1, /* MPI on the host: shared memory (the ranks' cores) inside a node */
};

/* One grid's prediction for one optimizer step of global_batch sequences of T tokens. */
typedef struct {
    int dims[4];
    int B, n_micro;      /* per-rank micro-batch, micro-batches per step */
    double flops_device; /* model FLOPs one device does per step */
    double gemm_eff;     /* small-GEMM efficiency applied, 0..1 */
    double compute_s;
    double attn_s; /* of compute_s: the attention's forward and backward (axmem_cuda: at mem_bw) */
    int recompute; /* the model recomputes activations (ax_model_opts.recompute) */
    int stream_z;  /* ... streams layer weights over Z (ax_model_opts.stream_z) */
    double recompute_s;               /* the backward's extra forward, on top of compute_s */
    double stream_bytes;              /* bytes the memory-bound passes move on a device in a step */
    double memory_s;                  /* their time at mem_bw, in step_s, hiding no communication */
    int level[AX_AXIS_COUNT];         /* AX_LEVEL_NODE / NET of each axis' groups */
    double comm_s[AX_AXIS_COUNT];     /* communication time per axis, before overlap */
    double exposed_s[AX_AXIS_COUNT];  /* after overlap */
    double hidden_s;                  /* communication hidden behind compute */
    double step_s, tokens_per_s, mfu; /* mfu: model FLOPs / (step x devices x peak) */
    double mem_state, mem_gathered, mem_acts, mem_total; /* bytes per device */
    double mem_device;  /* of mem_total: axmem_cuda's weight cache, staging and attention blocks */
    int fits;           /* mem_total <= machine memory */
    ax_step_volume vol; /* bytes per axis with 4-byte elements: the runtime's counters */
    int hosts[AX_AXIS_COUNT];             /* hosts an axis' groups span (ax_perfmodel_axis_hosts) */
    int overlap_on[AX_AXIS_COUNT];        /* the runtime's per-axis decision (ax_overlap_decide) */
    char overlap_why[AX_AXIS_COUNT][256]; /* and its reason */
} ax_plan_pred;

/* Predicts one grid (dims {D, X, Y, Z}) with n_micro micro-batches per step for a model run
 * with flags (AX_PERF_*: recomputation adds the extra forward, recompute_s, not hidden, its
 * all-reduces and saves activation memory, one working set plus every layer's input; streaming
 * over Z keeps two layers' blocks instead of all and moves the gathers and reduce-scatters of
 * ax_perfmodel_step_volume); overlap is lib/dist/overlap.h's mode: AX_OVERLAP_OFF (0),
 * AX_OVERLAP_FORCE (1: every axis) or AX_OVERLAP_AUTO (2: per axis, the runtime's rule on the
 * profile's placement and transport; ax_perfmodel_overlap_axis). AX_ERR_ARG with a message
 * when the shape does not split over the grid or the batch does not divide into D x Z x
 * n_micro; a grid that does not fit memory is a prediction with fits = 0. */
ax_status ax_perfmodel_predict(const ax_model_config *c, const ax_machine *mach, const int dims[4],
                               int global_batch, int T, int n_micro, int overlap, int flags,
                               ax_plan_pred *out);
/* AX_LEVEL_NODE when every group of `axis` lies within one node under the rank layout of
 * lib/dist/grid.h (X innermost), else AX_LEVEL_NET. */
int ax_perfmodel_axis_level(const int dims[4], ax_axis axis, int devices_per_node);
/* The hosts (nodes) an axis' groups span when ranks fill nodes of devices_per_node in world-rank
 * order: 1 when every group lies in one node (AX_LEVEL_NODE), else at least 2 (the first
 * group's count). */
int ax_perfmodel_axis_hosts(const int dims[4], ax_axis axis, int devices_per_node);
/* Whether the runtime overlaps `axis` under `mode` on this machine and grid: ax_overlap_decide
 * (lib/dist/overlap.h, the function the runtime calls) with the plan's placement (the axis'
 * hosts, min(devices, devices_per_node) ranks a host, the profile's threads and cores) and
 * device = the profile's transport is NCCL. 1 for on; the reason in why[cap]. */
int ax_perfmodel_overlap_axis(const ax_machine *mach, const int dims[4], ax_axis axis, int mode,
                              char *why, size_t cap);
