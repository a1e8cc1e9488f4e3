/* `axmem plan` as a library call (plan/cmd_plan.c parses the flags and prints): rank every 4D
 * grid of a device count by predicted step time (plan/perfmodel.h), with machine profiles
 * (built in, or JSON files: plan/machine.c) and a measurement of this machine
 * (plan/measure.c). */
#pragma once
#include "lib/core/json.h"
#include "lib/core/status.h"
#include "plan/perfmodel.h"

/* ---- machine profiles ----
 * JSON: {"name": "...", "source": "where the numbers come from", "gemm_tflops": R,
 *        "gemm_half_dim": K, "peak_tflops": P, "mem_gib": M, "devices_per_node": n,
 *        "node_bw_gbs": .., "node_lat_us": .., "net_bw_gbs": .., "net_lat_us": ..,
 *        "elem_bytes": 4|2, "overlap": 0..1,
 *        "transport": "host"|"nccl", "cores_per_node": n, "threads_per_device": t}
 * (GB = 1e9 bytes; bandwidth per device, one way). The last three are optional (defaults nccl,
 * 0 = not known, 1) and feed the per-axis overlap rule (ax_perfmodel_overlap_axis). */
typedef struct {
    ax_machine m;
    char source[512];
} ax_plan_machine;

/* The names of the built-in profiles, NULL-terminated. */
const char *const *ax_plan_machine_names(void);
/* A built-in profile by name, or else a JSON file by path; the error lists the names. */
ax_status ax_plan_machine_load(const char *name_or_path, ax_plan_machine *out);
ax_status ax_plan_machine_from_json(const ax_json *o, const char *what, ax_plan_machine *out);
void ax_plan_machine_json(const ax_plan_machine *pm, ax_jw *w); /* the JSON form above */

/* ---- ranking ---- */
typedef struct {
    int dims[4];
    char reason[256]; /* why the grid was rejected */
} ax_plan_reject;

typedef struct {
    ax_plan_pred *best; /* fitting grids, fastest first */
    int n_best;
    ax_plan_reject *rejected; /* grids that split the shape but not the memory, or nothing */
    int n_rejected;
    int n_grids; /* every factorisation of the device count */
} ax_plan_result;

/* Every grid D x X x Y x Z = devices; for each, the fewest micro-batches (dividing the
 * per-rank batch) that fit memory. overlap: AX_OVERLAP_OFF / FORCE / AUTO (lib/dist/overlap.h),
 * as --overlap off|force|auto. recompute: activation recomputation (train --recompute);
 * z_gather: layer weights streamed over Z (train --z-gather layer). Each is OFF (never), ON
 * (always; z_gather on a grid without Z has nothing to stream) or AUTO (per grid, whichever
 * fits and is fastest: recomputation and streaming fit where the default does not, and cost
 * compute or gathers where both fit). */
enum { AX_PLAN_RECOMPUTE_OFF = 0, AX_PLAN_RECOMPUTE_ON = 1, AX_PLAN_RECOMPUTE_AUTO = 2 };
ax_status ax_plan_rank(const ax_model_config *c, const ax_plan_machine *pm, int devices,
                       int global_batch, int T, int overlap, int recompute, int z_gather,
                       ax_plan_result *out);
void ax_plan_result_free(ax_plan_result *r);
/* The model shape of checkpoint `dir` (a step, or a run's newest): its whole configuration
 * when axmem wrote or imported it, else from its tensor table with heads from its config or,
 * heads_flag_set, the caller's c->n_heads. */
ax_status ax_plan_shape_from_ckpt(const char *dir, int heads_flag_set, ax_model_config *c);

/* ---- measurement (plan/measure.c) ----
 * The GEMM rate of this process' threads on two square sizes (fitting gemm_half_dim), the
 * memory, and, under mpirun with >= 2 ranks, the all-reduce bandwidth and latency between the
 * ranks (intra-node); serial, the network numbers stay those of `base`. Collective. */
ax_status ax_plan_measure(const ax_plan_machine *base, double budget_s, ax_plan_machine *out);
