/* `axmem plan`: the top grids for a model, batch, machine and device count, by predicted step
 * time (plan/plan_run.h); `--measure` writes this machine's profile. */
#include "cli/commands.h"
#include "lib/core/cliargs.h"
#include "lib/core/fsutil.h"
#include "lib/core/json.h"
#include "lib/dist/mpienv.h"
#include "lib/dist/overlap.h"
#include "plan/plan_run.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    int64_t layers, dim, heads, ffn, vocab, seq_len, global_batch, devices, top, kv_heads;
    int tie, no_overlap, force_overlap, json, measure;
    double budget;
    char ckpt[AX_CFG_STR_MAX], machine[AX_CFG_STR_MAX], out[AX_CFG_STR_MAX];
    char overlap[AX_CFG_STR_MAX], recompute[AX_CFG_STR_MAX], z_gather[AX_CFG_STR_MAX];
    char grad_comm[AX_CFG_STR_MAX];
    char engine[AX_CFG_STR_MAX];
} plan_args;

#define F(field) offsetof(plan_args, field)
static const ax_cfg_entry entries[] = {
    {"layers", AX_CFG_INT, F(layers), "12", 1, 4096, "transformer blocks"},
    {"dim", AX_CFG_INT, F(dim), "768", 2, 1 << 20, "model width C"},
    {"heads", AX_CFG_INT, F(heads), "12", 1, 4096, "attention heads"},
    {"ffn", AX_CFG_INT, F(ffn), "2048", 1, 1 << 22, "SwiGLU hidden size"},
    {"vocab", AX_CFG_INT, F(vocab), "50304", 2, 1 << 24, "vocabulary size"},
    {"tie-embeddings", AX_CFG_BOOL, F(tie), "true", 1, 0, "LM head shares the embedding"},
    AX_CFG_CKPT_ENTRY(F),
    {"seq-len", AX_CFG_INT, F(seq_len), "1024", 1, 1 << 22, "tokens per sequence T"},
    {"global-batch", AX_CFG_INT, F(global_batch), "64", 1, 1 << 30,
     "sequences per optimizer step, all ranks"},
    {"devices", AX_CFG_INT, F(devices), "8", 1, 1 << 24, "ranks (GPUs, or CPU processes)"},
    {"machine", AX_CFG_STR, F(machine), "h100", 1, 0,
     "profile: a100, h100, h200, perlmutter, frontier, alps, or a JSON file"},
    {"top", AX_CFG_INT, F(top), "5", 1, 1 << 20, "grids to print"},
    {"overlap", AX_CFG_STR, F(overlap), "auto", 1, 0,
     "auto: per axis as `axmem train` decides (priced off on an axis whose ranks share a host "
     "over MPI, where a run times both schedules first); force: every axis (train "
     "--force-overlap); off: every collective blocking"},
    {"no-overlap", AX_CFG_BOOL, F(no_overlap), "false", 1, 0, "as --overlap off (train's flag)"},
    {"force-overlap", AX_CFG_BOOL, F(force_overlap), "false", 1, 0,
     "as --overlap force (train's flag)"},
    {"recompute", AX_CFG_CHOICE, F(recompute), "auto|on|off", 1, 0,
     "activation recomputation (train --recompute): auto weighs it per grid (it fits where "
     "keeping every activation does not, at about a third more compute); on: always; off: "
     "never"},
    {"z-gather", AX_CFG_CHOICE, F(z_gather), "auto|step|layer", 1, 0,
     "on grids with Z > 1 (train --z-gather): auto weighs both per grid; step: every layer's "
     "weights gathered once a step and kept; layer: each layer's gathered before its forward "
     "and backward, two kept (less memory, more gathers)"},
    {"engine", AX_CFG_CHOICE, F(engine), "axmem|bf16", 1, 0,
     "what runs: axmem, this engine (on a GPU profile its bf16 run: fp32 activations, gathered "
     "blocks and collectives but bf16 norm and MLP outputs, plus its bf16 weight cache, GEMM "
     "staging and attention blocks); bf16, an engine with everything in the profile's "
     "elem_bytes (2 on the GPU profiles: all bf16, as AxoNN runs)"},
    {"grad-comm", AX_CFG_CHOICE, F(grad_comm), "fp32|bf16", 1, 0,
     "gradient reduction (train --grad-comm): fp32; bf16, the Z reduce-scatters and the data "
     "all-reduce at 2 bytes an element, plus their bf16 staging (no change with --engine "
     "bf16, whose collectives are bf16 already)"},
    AX_CFG_JSON_ENTRY(F, "print JSON instead of the table"),
    {"measure", AX_CFG_BOOL, F(measure), "false", 1, 0,
     "measure this machine (GEMM rate; under mpirun -np 2 the intra-node all-reduce) and "
     "write its profile to --out"},
    {"budget", AX_CFG_FLOAT, F(budget), "20", 1, 600,
     "--measure: below 5 s a smaller large GEMM (768 instead of 1536)"},
    AX_CFG_OUT_ENTRY(F, "", "--measure: the profile file to write (default: print it)"),
    {"kv-heads", AX_CFG_INT, F(kv_heads), "0", 0, 4096,
     "grouped-query attention: K/V heads (divides --heads; 0 = one per head)"},
};
#undef F

static const ax_cfg_table table = {
    .usage = "axmem plan [flags]",
    .summary =
        "Ranks every 4D grid DxXxYxZ of --devices ranks by predicted step time for a model\n"
        "shape (flags, or --ckpt), --seq-len and --global-batch on a machine profile:\n"
        "compute from the model's FLOPs at the profile's GEMM rate (with --engine axmem on a\n"
        "GPU profile the attention from the bytes its blocked CUDA kernels move), the\n"
        "memory-bound passes (AdamW, the elementwise ops) from the bytes they move at its\n"
        "mem_bw_gbs, communication per axis from the bytes the runtime counts\n"
        "(lib/dist/comm.h) at the bandwidth and latency of the network level the axis spans\n"
        "(X innermost in rank order), minus what the overlap schedule hides, and memory per\n"
        "device; grids that do not fit are listed as rejected. `--measure [--out FILE.json]`\n"
        "measures this machine (run it under `mpirun -np 2` to measure the intra-node\n"
        "all-reduce too).",
    .entries = entries,
    .n = (int)(sizeof entries / sizeof entries[0]),
};

static const char *axis_short[AX_AXIS_COUNT] = {"data", "x", "y", "z", "batch", "world"};
static const char *mode_name[3] = {"off", "force", "auto"};

/* --overlap auto|force|off, or train's --no-overlap / --force-overlap */
static ax_status overlap_mode(const plan_args *a, const uint8_t *set, int *mode) {
    int named = set[ax_cfg_find(&table, "overlap") - entries]; /* given on the command line */
    if (!strcmp(a->overlap, "off"))
        *mode = AX_OVERLAP_OFF;
    else if (!strcmp(a->overlap, "force"))
        *mode = AX_OVERLAP_FORCE;
    else if (!strcmp(a->overlap, "auto"))
        *mode = AX_OVERLAP_AUTO;
    else
        return ax_errorf(AX_ERR_ARG, "--overlap %s: use auto, force or off", a->overlap);
    if (a->no_overlap && a->force_overlap)
        return ax_errorf(AX_ERR_ARG, "--force-overlap contradicts --no-overlap: drop one of them");
    int flag = a->no_overlap ? AX_OVERLAP_OFF : a->force_overlap ? AX_OVERLAP_FORCE : -1;
    if (flag >= 0 && named && flag != *mode)
        return ax_errorf(AX_ERR_ARG, "--overlap %s contradicts --%s: drop one of them", a->overlap,
                         a->no_overlap ? "no-overlap" : "force-overlap");
    if (flag >= 0) *mode = flag;
    return AX_OK;
}

/* the data all-reduce ends the step (model_step.c): whatever the axis' decision, the schedule
 * overlaps nothing on it, and the plan hides nothing there */
static const char *data_note(int a) {
    return a == AX_AXIS_DATA ? " (nothing overlaps on data: its all-reduce ends the step)" : "";
}

static void pred_json(const ax_plan_pred *p, ax_jw *w) {
    char grid[64];
    snprintf(grid, sizeof grid, "%dx%dx%dx%d", p->dims[0], p->dims[1], p->dims[2], p->dims[3]);
    ax_jw_obj_begin(w);
    ax_jw_key(w, "grid"), ax_jw_str(w, grid);
    ax_jw_key(w, "micro_batch"), ax_jw_int(w, p->B);
    ax_jw_key(w, "n_micro"), ax_jw_int(w, p->n_micro);
    ax_jw_key(w, "step_s"), ax_jw_num(w, p->step_s);
    ax_jw_key(w, "compute_s"), ax_jw_num(w, p->compute_s);
    ax_jw_key(w, "attention_s"), ax_jw_num(w, p->attn_s);
    ax_jw_key(w, "recompute"), ax_jw_bool(w, p->recompute);
    ax_jw_key(w, "recompute_s"), ax_jw_num(w, p->recompute_s);
    ax_jw_key(w, "memory_s"), ax_jw_num(w, p->memory_s);
    ax_jw_key(w, "stream_gib"), ax_jw_num(w, p->stream_bytes / 1073741824.0);
    ax_jw_key(w, "z_gather"), ax_jw_str(w, p->stream_z ? "layer" : "step");
    ax_jw_key(w, "gemm_eff"), ax_jw_num(w, p->gemm_eff);
    ax_jw_key(w, "hidden_s"), ax_jw_num(w, p->hidden_s);
    const char *keys[3] = {"comm_s", "exposed_s", "bytes"};
    for (int k = 0; k < 3; k++) {
        ax_jw_key(w, keys[k]);
        ax_jw_obj_begin(w);
        for (int a = 0; a < AX_AXIS_COUNT; a++) {
            double b = 0;
            for (int kind = 0; kind < AX_COMM_KINDS; kind++) b += p->vol.bytes[kind][a];
            ax_jw_key(w, axis_short[a]);
            ax_jw_num(w, k == 0 ? p->comm_s[a] : k == 1 ? p->exposed_s[a] : b);
        }
        ax_jw_obj_end(w);
    }
    ax_jw_key(w, "overlap");
    ax_jw_obj_begin(w);
    for (int a = AX_AXIS_DATA; a <= AX_AXIS_Z; a++)
        if (p->dims[a] > 1) ax_jw_key(w, axis_short[a]), ax_jw_str(w, p->overlap_why[a]);
    ax_jw_obj_end(w);
    ax_jw_key(w, "level");
    ax_jw_obj_begin(w);
    for (int a = 0; a < AX_AXIS_COUNT; a++)
        ax_jw_key(w, axis_short[a]), ax_jw_str(w, p->level[a] == AX_LEVEL_NODE ? "node" : "net");
    ax_jw_obj_end(w);
    ax_jw_key(w, "mem_gib");
    ax_jw_obj_begin(w);
    ax_jw_key(w, "state"), ax_jw_num(w, p->mem_state / 1073741824.0);
    ax_jw_key(w, "gathered"), ax_jw_num(w, p->mem_gathered / 1073741824.0);
    ax_jw_key(w, "activations"), ax_jw_num(w, p->mem_acts / 1073741824.0);
    ax_jw_key(w, "device"), ax_jw_num(w, p->mem_device / 1073741824.0);
    ax_jw_key(w, "total"), ax_jw_num(w, p->mem_total / 1073741824.0);
    ax_jw_obj_end(w);
    ax_jw_key(w, "tokens_per_s"), ax_jw_num(w, p->tokens_per_s);
    ax_jw_key(w, "mfu"), ax_jw_num(w, p->mfu);
    ax_jw_obj_end(w);
}

static void print_table(const plan_args *a, int mode, const ax_model_config *c,
                        const ax_plan_machine *pm, const ax_plan_result *r) {
    char kv[32] = "";
    if (c->n_kv_heads) snprintf(kv, sizeof kv, " (%d K/V)", c->n_kv_heads);
    printf("model: %d layers, dim %d, %d heads%s, ffn %d, vocab %d%s; %.3g B parameters\n",
           c->n_layers, c->dim, c->n_heads, kv, c->ffn, c->vocab,
           c->tie_embeddings ? " (tied)" : "", (double)ax_model_config_n_params(c) / 1e9);
    printf("run: %lld devices on %s (%d per node, %s transport), global batch %lld x %lld tokens, "
           "overlap %s, recompute %s, z-gather %s\n",
           (long long)a->devices, pm->m.name, pm->m.devices_per_node,
           pm->m.transport == AX_TRANSPORT_HOST ? "host" : "nccl", (long long)a->global_batch,
           (long long)a->seq_len, mode_name[mode], a->recompute, a->z_gather);
    if (pm->m.axmem_cuda)
        printf("engine: axmem on CUDA, bf16 run (fp32 activations, gathered blocks and "
               "collectives; bf16 norm and MLP outputs; bf16 weight cache and GEMM staging)%s\n",
               pm->m.grad_bf16 ? "; gradients reduced in bf16" : "");
    else
        printf("engine: %s (activations, gathered blocks and collectives at %d bytes an "
               "element%s)\n",
               a->engine, pm->m.elem_bytes,
               pm->m.grad_bf16 && pm->m.elem_bytes == 4 ? "; gradients reduced in bf16" : "");
    printf("%d grids: %d fit, %d rejected\n\n", r->n_grids, r->n_best, r->n_rejected);
    printf("%-4s %-14s %-7s %9s %9s %9s  %-37s %8s %8s %12s %6s\n", "rank", "grid", "BxNmb",
           "step_s", "compute", "memory", "exposed comm s: data x y z other", "hidden", "mem_GiB",
           "tokens/s", "MFU");
    for (int i = 0; i < r->n_best && i < a->top; i++) {
        const ax_plan_pred *p = &r->best[i];
        char grid[64], mb[32], comm[96];
        snprintf(grid, sizeof grid, "%dx%dx%dx%d", p->dims[0], p->dims[1], p->dims[2], p->dims[3]);
        snprintf(mb, sizeof mb, "%dx%d%s%s", p->B, p->n_micro, p->recompute ? "r" : "",
                 p->stream_z ? "s" : "");
        snprintf(comm, sizeof comm, "%.3g %.3g%s %.3g%s %.3g%s %.3g", p->exposed_s[0],
                 p->exposed_s[1], p->level[1] ? "n" : "", p->exposed_s[2], p->level[2] ? "n" : "",
                 p->exposed_s[3], p->level[3] ? "n" : "", p->exposed_s[4] + p->exposed_s[5]);
        printf("%-4d %-14s %-7s %9.4g %9.4g %9.3g  %-37s %8.3g %8.2f %12.4g %5.1f%%\n", i + 1, grid,
               mb, p->step_s, p->compute_s + p->recompute_s, p->memory_s, comm, p->hidden_s,
               p->mem_total / 1073741824.0, p->tokens_per_s, 100 * p->mfu);
        /* per axis, the runtime's overlap decision on this placement (what the row assumed) */
        for (int ax = AX_AXIS_DATA; ax <= AX_AXIS_Z; ax++)
            if (p->dims[ax] > 1)
                printf("     overlap %s (%d ranks, %d host%s): %s%s\n", axis_short[ax], p->dims[ax],
                       p->hosts[ax], p->hosts[ax] == 1 ? "" : "s", p->overlap_why[ax],
                       data_note(ax));
    }
    printf("(memory: the memory-bound passes, AdamW and the elementwise ops, at the profile's "
           "mem_bw_gbs; \"n\" after an axis: its groups span nodes; other = batch + world "
           "scalars; \"r\" "
           "after BxNmb: activations recomputed, train --recompute, its extra forward in "
           "compute; \"s\": layer weights streamed over Z, train --z-gather layer)\n");
    int shown = 0;
    for (int i = 0; i < r->n_rejected && shown < a->top; i++, shown++)
        printf("%s%dx%dx%dx%d rejected: %s\n", shown ? "" : "\n", r->rejected[i].dims[0],
               r->rejected[i].dims[1], r->rejected[i].dims[2], r->rejected[i].dims[3],
               r->rejected[i].reason);
    if (r->n_rejected > shown)
        printf("... and %d more rejected (--json lists all)\n", r->n_rejected - shown);
}

static int do_measure(const plan_args *a) {
    ax_plan_machine base, got;
    if (ax_plan_machine_load(a->machine[0] && strcmp(a->machine, "h100") ? a->machine : "h100",
                             &base) != AX_OK ||
        ax_plan_measure(&base, a->budget, &got) != AX_OK) {
        fprintf(stderr, "axmem plan: %s\n", ax_error_msg());
        return 1;
    }
    snprintf(got.m.name, sizeof got.m.name, "this-cpu");
    if (ax_mpi_world_rank() != 0) return 0; /* rank 0 writes the profile */
    ax_jw w;
    ax_jw_init(&w);
    ax_plan_machine_json(&got, &w);
    ax_status st = AX_OK;
    if (a->out[0]) {
        char *text = (char *)ax_jw_text(&w);
        st = ax_write_file(a->out, text, strlen(text));
    }
    if (st == AX_OK && !a->out[0]) printf("%s\n", ax_jw_text(&w));
    if (st == AX_OK && a->out[0]) printf("wrote %s\n%s\n", a->out, ax_jw_text(&w));
    ax_jw_free(&w);
    if (st != AX_OK) fprintf(stderr, "axmem plan: %s\n", ax_error_msg());
    return st == AX_OK ? 0 : 1;
}

int ax_cmd_plan(int argc, char **argv) {
    plan_args a;
    uint8_t set[sizeof entries / sizeof entries[0]] = {0};
    int rc = ax_cli_parse("plan", &table, &a, argc, argv, set);
    if (rc >= 0) return rc;
    if (a.measure) return do_measure(&a);
    int mode = AX_OVERLAP_AUTO;
    ax_status st = overlap_mode(&a, set, &mode);
    if (st != AX_OK) return ax_cli_fail("plan", st);
    ax_model_config c = {.n_layers = (int)a.layers,
                         .dim = (int)a.dim,
                         .n_heads = (int)a.heads,
                         .ffn = (int)a.ffn,
                         .vocab = (int)a.vocab,
                         .tie_embeddings = a.tie,
                         .n_kv_heads = (int)a.kv_heads,
                         .rope_theta = 10000.0f,
                         .norm_eps = 1e-5f};
    ax_plan_machine pm;
    ax_plan_result r = {0};
    int heads_set = set[ax_cfg_find(&table, "heads") - entries];
    if (a.ckpt[0]) st = ax_plan_shape_from_ckpt(a.ckpt, heads_set, &c);
    if (st == AX_OK) st = ax_plan_machine_load(a.machine, &pm);
    /* --engine axmem on a GPU (NCCL) profile: the CUDA engine's bf16 run as it allocates and
     * communicates; on a host profile the CPU engine is elem_bytes (4) throughout already */
    pm.m.axmem_cuda =
        st == AX_OK && !strcmp(a.engine, "axmem") && pm.m.transport == AX_TRANSPORT_NCCL;
    pm.m.grad_bf16 = st == AX_OK && !strcmp(a.grad_comm, "bf16");
    if (st == AX_OK)
        st = ax_plan_rank(&c, &pm, (int)a.devices, (int)a.global_batch, (int)a.seq_len, mode,
                          !strcmp(a.recompute, "on")    ? AX_PLAN_RECOMPUTE_ON
                          : !strcmp(a.recompute, "off") ? AX_PLAN_RECOMPUTE_OFF
                                                        : AX_PLAN_RECOMPUTE_AUTO,
                          !strcmp(a.z_gather, "layer")  ? AX_PLAN_RECOMPUTE_ON
                          : !strcmp(a.z_gather, "step") ? AX_PLAN_RECOMPUTE_OFF
                                                        : AX_PLAN_RECOMPUTE_AUTO,
                          &r);
    if (st != AX_OK) return ax_cli_fail("plan", st);
    if (a.json) {
        ax_jw w;
        ax_jw_init(&w);
        ax_jw_obj_begin(&w);
        ax_jw_key(&w, "machine"), ax_plan_machine_json(&pm, &w);
        ax_jw_key(&w, "devices"), ax_jw_int(&w, a.devices);
        ax_jw_key(&w, "global_batch"), ax_jw_int(&w, a.global_batch);
        ax_jw_key(&w, "seq_len"), ax_jw_int(&w, a.seq_len);
        ax_jw_key(&w, "overlap"), ax_jw_str(&w, mode_name[mode]);
        ax_jw_key(&w, "recompute"), ax_jw_str(&w, a.recompute);
        ax_jw_key(&w, "z_gather"), ax_jw_str(&w, a.z_gather);
        ax_jw_key(&w, "engine"), ax_jw_str(&w, pm.m.axmem_cuda ? "axmem-cuda" : a.engine);
        ax_jw_key(&w, "grad_comm"), ax_jw_str(&w, a.grad_comm);
        ax_jw_key(&w, "n_grids"), ax_jw_int(&w, r.n_grids);
        ax_jw_key(&w, "grids");
        ax_jw_arr_begin(&w);
        for (int i = 0; i < r.n_best && i < a.top; i++) pred_json(&r.best[i], &w);
        ax_jw_arr_end(&w);
        ax_jw_key(&w, "rejected");
        ax_jw_arr_begin(&w);
        for (int i = 0; i < r.n_rejected; i++) {
            char grid[64];
            const ax_plan_reject *j = &r.rejected[i];
            snprintf(grid, sizeof grid, "%dx%dx%dx%d", j->dims[0], j->dims[1], j->dims[2],
                     j->dims[3]);
            ax_jw_obj_begin(&w);
            ax_jw_key(&w, "grid"), ax_jw_str(&w, grid);
            ax_jw_key(&w, "reason"), ax_jw_str(&w, j->reason);
            ax_jw_obj_end(&w);
        }
        ax_jw_arr_end(&w);
        ax_jw_obj_end(&w);
        printf("%s\n", ax_jw_text(&w));
        ax_jw_free(&w);
    } else {
        print_table(&a, mode, &c, &pm, &r);
    }
    ax_plan_result_free(&r);
    return 0;
}
