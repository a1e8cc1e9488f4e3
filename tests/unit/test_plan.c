/* axmem plan's model and ranking without MPI: grid enumeration, network levels from the rank
 * layout, memory against what the model allocates, rejection of grids that do not fit (with
 * the reason), micro-batching, overlap, machine profiles. Bytes per axis against the runtime's
 * counters: tests/mpi/mpi_plan.c (serial and MPI grids). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "lib/core/json.h"
#include "lib/dist/comm.h"
#include "lib/dist/grid.h"
#include "lib/dist/overlap.h"
#include "lib/model/model.h"
#include "plan/perfmodel.h"
#include "plan/plan_run.h"
#include "test_suite_files.h"

static ax_model_config small(void) {
    return (ax_model_config){.n_layers = 4,
                             .dim = 512,
                             .n_heads = 8,
                             .ffn = 1376,
                             .vocab = 8192,
                             .tie_embeddings = 1,
                             .rope_theta = 10000.0f,
                             .norm_eps = 1e-5f};
}

static ax_plan_machine machine(const char *name) {
    ax_plan_machine pm;
    cr_assert_eq(ax_plan_machine_load(name, &pm), AX_OK, "%s", ax_error_msg());
    return pm;
}

Test(plan, enumerates_every_grid) {
    ax_model_config c = small();
    ax_plan_machine pm = machine("h100");
    ax_plan_result r;
    /* ordered 4-tuples with product 8: C(6, 3) = 20; 16 = 2^4: C(7, 3) = 35; 12 = 2^2 3: 10 x 4 */
    int dev[3] = {8, 16, 12}, want[3] = {20, 35, 40};
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(ax_plan_rank(&c, &pm, dev[i], 48, 128, 1, AX_PLAN_RECOMPUTE_OFF,
                                  AX_PLAN_RECOMPUTE_OFF, &r),
                     AX_OK, "%s", ax_error_msg());
        cr_assert_eq(r.n_grids, want[i], "%d devices: %d grids", dev[i], r.n_grids);
        cr_assert_eq(r.n_best + r.n_rejected, r.n_grids);
        for (int k = 1; k < r.n_best; k++) cr_assert(r.best[k - 1].step_s <= r.best[k].step_s);
        ax_plan_result_free(&r);
    }
}

Test(plan, rejects_shapes_that_do_not_split) {
    ax_model_config c = small();
    c.n_heads = 6, c.dim = 384; /* heads split over 1, 2, 3, 6, not 4 */
    ax_plan_machine pm = machine("h100");
    ax_plan_result r;
    cr_assert_eq(
        ax_plan_rank(&c, &pm, 4, 8, 64, 1, AX_PLAN_RECOMPUTE_OFF, AX_PLAN_RECOMPUTE_OFF, &r), AX_OK,
        "%s", ax_error_msg());
    int seen = 0;
    for (int i = 0; i < r.n_rejected; i++)
        if (r.rejected[i].dims[2] == 4) {
            seen = 1;
            cr_assert(strstr(r.rejected[i].reason, "--heads 6"), "%s", r.rejected[i].reason);
        }
    cr_assert(seen, "Gy = 4 does not split 6 heads: must be rejected");
    for (int i = 0; i < r.n_best; i++) cr_assert_neq(r.best[i].dims[2], 4);
    ax_plan_result_free(&r);
}

Test(plan, levels_follow_the_rank_layout) {
    int dims[4] = {2, 2, 2, 1}; /* X stride 1, Y stride 2, D stride 4 */
    cr_assert_eq(ax_perfmodel_axis_level(dims, AX_AXIS_X, 4), AX_LEVEL_NODE);
    cr_assert_eq(ax_perfmodel_axis_level(dims, AX_AXIS_Y, 4), AX_LEVEL_NODE);
    cr_assert_eq(ax_perfmodel_axis_level(dims, AX_AXIS_DATA, 4), AX_LEVEL_NET);
    cr_assert_eq(ax_perfmodel_axis_level(dims, AX_AXIS_Y, 2), AX_LEVEL_NET);
    cr_assert_eq(ax_perfmodel_axis_level(dims, AX_AXIS_X, 2), AX_LEVEL_NODE);
    cr_assert_eq(ax_perfmodel_axis_level(dims, AX_AXIS_Z, 1), AX_LEVEL_NODE); /* size 1 */
    cr_assert_eq(ax_perfmodel_axis_level(dims, AX_AXIS_DATA, 8), AX_LEVEL_NODE);
    int odd[4] = {2, 3, 1, 1}; /* groups of 3 do not tile a node of 4: ranks 3..5 cross */
    cr_assert_eq(ax_perfmodel_axis_level(odd, AX_AXIS_X, 4), AX_LEVEL_NET);
    cr_assert_eq(ax_perfmodel_axis_hosts(odd, AX_AXIS_X, 4), 2);
    /* a job no larger than a node sits in one node whatever its shape (ranks fill nodes in
     * rank order): 3 or 6 ranks of a node of 4 or 8 never reach the network */
    int three[4] = {1, 3, 1, 1}, six[4] = {1, 3, 1, 2};
    cr_assert_eq(ax_perfmodel_axis_level(three, AX_AXIS_X, 4), AX_LEVEL_NODE);
    for (int a = 0; a < AX_AXIS_COUNT; a++)
        cr_assert_eq(ax_perfmodel_axis_hosts(six, (ax_axis)a, 8), 1, "axis %d", a);
}

/* ---- the per-axis overlap rule: the plan against the runtime's, on simulated placements ----
 * A placement: world ranks, devices_per_node a node, rank r on host r / n. For each axis, the
 * groups and the hosts each spans, counted rank by rank as the runtime counts them
 * (ax_grid_axis_hosts: one count per host's first rank of the axis' communicator). */
static int in_group(const int dims[4], ax_axis axis, int r, int q) {
    int cr[4], cq[4];
    for (int a = AX_AXIS_X, rr = r, qq = q; a <= AX_AXIS_Z + 1; a++) {
        int d = a <= AX_AXIS_Z ? dims[a] : dims[AX_AXIS_DATA];
        int i = a <= AX_AXIS_Z ? a : AX_AXIS_DATA;
        cr[i] = rr % d, rr /= d, cq[i] = qq % d, qq /= d;
    }
    for (int a = 0; a < 4; a++) {
        int varies = a == (int)axis || axis == AX_AXIS_WORLD ||
                     (axis == AX_AXIS_BATCH && (a == AX_AXIS_DATA || a == AX_AXIS_Z));
        if (!varies && cr[a] != cq[a]) return 0;
    }
    return 1;
}

/* hosts of the group holding rank r */
static int group_hosts(const int dims[4], ax_axis axis, int r, int n) {
    int world = dims[0] * dims[1] * dims[2] * dims[3], hosts = 0;
    for (int h = 0; h * n < world; h++) {
        int here = 0;
        for (int q = h * n; q < (h + 1) * n && q < world; q++) here |= in_group(dims, axis, r, q);
        hosts += here;
    }
    return hosts;
}

static const int placements_n[] = {1, 2, 3, 4, 8};

/* every grid of `world` ranks: fn(dims) */
#define FOR_GRIDS(world, dims)                                                                     \
    for (int d_ = 1; d_ <= (world); d_++)                                                          \
        for (int x_ = 1; (world) % d_ == 0 && x_ <= (world) / d_; x_++)                            \
            for (int y_ = 1; ((world) / d_) % x_ == 0 && y_ <= (world) / d_ / x_; y_++)            \
                for (int dims[4] = {d_, x_, y_, (world) / d_ / x_ / y_};                           \
                     ((world) / d_ / x_) % y_ == 0 && dims[0]; dims[0] = 0)

Test(plan, axis_hosts_match_the_placement) {
    int worlds[] = {2, 3, 4, 6, 8, 12, 16};
    for (int w = 0; w < 7; w++)
        for (int ni = 0; ni < 5; ni++) {
            int n = placements_n[ni], world = worlds[w];
            FOR_GRIDS(world, dims) {
                for (int a = 0; a < AX_AXIS_COUNT; a++) {
                    int lo = 1 << 30, hi = 0;
                    for (int r = 0; r < world; r++) {
                        int h = group_hosts(dims, (ax_axis)a, r, n);
                        lo = h < lo ? h : lo, hi = h > hi ? h : hi;
                    }
                    int got = ax_perfmodel_axis_hosts(dims, (ax_axis)a, n);
                    cr_assert_eq(got == 1, hi == 1,
                                 "%dx%dx%dx%d axis %d, %d a node: plan %d hosts, "
                                 "groups %d..%d",
                                 dims[0], dims[1], dims[2], dims[3], a, n, got, lo, hi);
                    if (lo == hi)
                        cr_assert_eq(got, hi, "%dx%dx%dx%d axis %d, %d a node", dims[0], dims[1],
                                     dims[2], dims[3], a, n);
                }
            }
        }
}

static ax_machine host_machine(int per_node, int cores, int threads) {
    ax_plan_machine pm = machine("h100");
    pm.m.devices_per_node = per_node, pm.m.transport = AX_TRANSPORT_HOST;
    pm.m.cores_per_node = cores, pm.m.threads_per_device = threads;
    return pm.m;
}

/* The plan's decision is the runtime's rule (ax_overlap_decide) on the inputs a run on that
 * placement would measure: its group's hosts, the ranks on its host, threads, cores, device. */
Test(plan, overlap_decision_matches_the_runtime_rule) {
    int worlds[] = {2, 4, 6, 8, 12, 16}, checked = 0, on = 0, off = 0, timed_n = 0;
    for (int w = 0; w < 6; w++)
        for (int ni = 0; ni < 5; ni++)
            for (int kind = 0; kind < 3; kind++) {
                int n = placements_n[ni], world = worlds[w];
                /* host transport with cores to spare; host with too few cores; NCCL */
                ax_machine m = host_machine(n, kind == 1 ? n : 4 * n, kind == 1 ? 2 : 1);
                if (kind == 2) m.transport = AX_TRANSPORT_NCCL;
                FOR_GRIDS(world, dims) {
                    for (int a = AX_AXIS_DATA; a <= AX_AXIS_Z; a++)
                        for (int mode = 0; mode <= 2; mode++) {
                            /* the runtime: rank 0's group (every group alike when the plan
                             * says one host, or when the node is tiled) */
                            int hosts = group_hosts(dims, (ax_axis)a, 0, n);
                            int local = world < n ? world : n;
                            char want[256], got[256];
                            int rt =
                                ax_overlap_decide(mode, dims[a], hosts, local, m.threads_per_device,
                                                  m.cores_per_node, kind == 2, want, sizeof want);
                            int pl = ax_perfmodel_overlap_axis(&m, dims, (ax_axis)a, mode, got,
                                                               sizeof got);
                            int same_hosts = ax_perfmodel_axis_hosts(dims, (ax_axis)a, n) == hosts;
                            if (!same_hosts) continue; /* uneven groups: the plan takes the worst */
                            cr_assert_eq(pl, rt, "%dx%dx%dx%d axis %d mode %d, %d a node: %s vs %s",
                                         dims[0], dims[1], dims[2], dims[3], a, mode, n, got, want);
                            /* the runtime's reason; where a run would time the axis, the
                             * plan says so after it */
                            size_t wl = strlen(want);
                            int timed = ax_overlap_measurable(mode, (ax_axis)a, dims[a], hosts,
                                                              local, m.threads_per_device,
                                                              m.cores_per_node, kind == 2);
                            cr_assert(!strncmp(got, want, wl), "%s vs %s", got, want);
                            cr_assert_str_eq(got + wl, timed ? "; a run times both schedules "
                                                               "first and keeps the faster"
                                                             : "");
                            checked++, on += pl, off += !pl, timed_n += timed;
                        }
                }
            }
    cr_assert(checked > 1000 && on > 100 && off > 100 && timed_n > 10,
              "%d cases, %d on, %d off, %d timed", checked, on, off, timed_n);

    /* the named cases: one host over MPI -> off; across nodes -> on; NCCL -> on; too few cores */
    char why[160];
    int x2[4] = {1, 2, 1, 1}, d2[4] = {2, 1, 1, 1};
    ax_machine one = host_machine(2, 2, 1), two = host_machine(1, 2, 1);
    cr_assert_eq(ax_perfmodel_overlap_axis(&one, x2, AX_AXIS_X, AX_OVERLAP_AUTO, why, sizeof why),
                 0);
    cr_assert(strstr(why, "share one host"), "%s", why);
    cr_assert_eq(
        ax_perfmodel_overlap_axis(&two, d2, AX_AXIS_DATA, AX_OVERLAP_AUTO, why, sizeof why), 1);
    cr_assert(strstr(why, "span 2 hosts"), "%s", why);
    ax_machine busy = host_machine(1, 1, 2); /* 1 rank x 2 threads on 1 core */
    cr_assert_eq(
        ax_perfmodel_overlap_axis(&busy, d2, AX_AXIS_DATA, AX_OVERLAP_AUTO, why, sizeof why), 0);
    cr_assert(strstr(why, "cores"), "%s", why);
    ax_plan_machine gpu = machine("h100");
    cr_assert_eq(ax_perfmodel_overlap_axis(&gpu.m, x2, AX_AXIS_X, AX_OVERLAP_AUTO, why, sizeof why),
                 1);
    cr_assert(strstr(why, "NCCL"), "%s", why);
    cr_assert_eq(ax_perfmodel_overlap_axis(&one, x2, AX_AXIS_X, AX_OVERLAP_FORCE, why, sizeof why),
                 1);
    cr_assert_eq(ax_perfmodel_overlap_axis(&gpu.m, x2, AX_AXIS_X, AX_OVERLAP_OFF, why, sizeof why),
                 0);
}

/* the parameter/gradient/moment memory is exactly the slabs the model allocates */
Test(plan, state_memory_matches_the_model) {
    ax_model_config c = small();
    c.tie_embeddings = 0;
    ax_model_t *m = NULL;
    cr_assert_eq(ax_model_create(&c, 1, 8, &m), AX_OK, "%s", ax_error_msg());
    ax_plan_machine pm = machine("h100");
    ax_plan_pred p;
    int dims[4] = {1, 1, 1, 1};
    cr_assert_eq(ax_perfmodel_predict(&c, &pm.m, dims, 1, 8, 1, 1, 0, &p), AX_OK);
    cr_assert_eq(p.mem_state, 16.0 * (double)ax_model_n_local(m), "%.0f vs 16 x %lld", p.mem_state,
                 (long long)ax_model_n_local(m));
    ax_model_free(m);
    /* ZeRO over Z shards it: 4 ranks hold about a quarter each */
    int z4[4] = {1, 1, 1, 4};
    ax_plan_pred q;
    cr_assert_eq(ax_perfmodel_predict(&c, &pm.m, z4, 4, 8, 1, 1, 0, &q), AX_OK);
    cr_assert(q.mem_state < p.mem_state / 3.9 && q.mem_state >= p.mem_state / 4);
    cr_assert(q.mem_gathered > 0 && p.mem_gathered == 0);
    /* and is exactly the shard the data all-reduce sends: 2 (p-1)/p x n_local x 4 bytes */
    int dz[4] = {2, 2, 1, 2};
    cr_assert_eq(ax_perfmodel_predict(&c, &pm.m, dz, 8, 8, 1, 1, 0, &q), AX_OK);
    cr_assert_eq(q.mem_state, 4.0 * q.vol.bytes[AX_COMM_ALLREDUCE][AX_AXIS_DATA], "%.0f vs %.0f",
                 q.mem_state, q.vol.bytes[AX_COMM_ALLREDUCE][AX_AXIS_DATA]);
}

/* grouped-query attention and the GPT-NeoX / GPT-2 tensors: the state is still the model's own
 * allocation (the table's smaller wqkv, biases, LayerNorm biases, learned positions) */
Test(plan, state_memory_matches_other_architectures) {
    ax_model_config cs[3] = {small(), small(), small()};
    cs[0].n_kv_heads = 2;
    cs[1].n_kv_heads = 4, cs[1].norm = AX_NORM_LAYER, cs[1].mlp = AX_MLP_GELU, cs[1].bias = 1;
    cs[1].parallel_residual = 1, cs[1].rotary_dim = 16;
    cs[2].norm = AX_NORM_LAYER, cs[2].mlp = AX_MLP_GELU_TANH, cs[2].bias = 1;
    cs[2].pos = AX_POS_LEARNED, cs[2].max_pos = 64;
    ax_plan_machine pm = machine("h100");
    for (int k = 0; k < 3; k++) {
        ax_model_t *m = NULL;
        cr_assert_eq(ax_model_create(&cs[k], 1, 8, &m), AX_OK, "%s", ax_error_msg());
        ax_plan_pred p;
        int dims[4] = {1, 1, 1, 1};
        cr_assert_eq(ax_perfmodel_predict(&cs[k], &pm.m, dims, 1, 8, 1, 1, 0, &p), AX_OK);
        cr_assert_eq(p.mem_state, 16.0 * (double)ax_model_n_local(m),
                     "config %d: %.0f vs 16 x %lld", k, p.mem_state,
                     (long long)ax_model_n_local(m));
        ax_model_free(m);
    }
    /* GQA's narrower qkv: fewer parameters and a smaller qkv all-reduce over X */
    ax_model_config mha = small(), gqa = small();
    gqa.n_kv_heads = 2;
    int x2[4] = {1, 2, 1, 1};
    ax_step_volume vm, vg;
    ax_perfmodel_step_volume(&mha, x2, 1, 8, 1, 0, &vm);
    ax_perfmodel_step_volume(&gqa, x2, 1, 8, 1, 0, &vg);
    cr_assert_lt(vg.bytes[AX_COMM_ALLREDUCE][AX_AXIS_X], vm.bytes[AX_COMM_ALLREDUCE][AX_AXIS_X]);
    cr_assert_lt(ax_model_config_n_params(&gqa), ax_model_config_n_params(&mha));
}

static ax_plan_machine tiny_memory(double gib) {
    ax_plan_machine pm = machine("a100");
    pm.m.mem_bytes = gib * 1073741824.0;
    return pm;
}

Test(plan, grids_that_do_not_fit_are_rejected_with_the_reason) {
    ax_model_config c = small(); /* ~29 M parameters: 0.44 GiB of state on one device */
    ax_plan_machine pm = tiny_memory(0.2);
    ax_plan_result r;
    cr_assert_eq(
        ax_plan_rank(&c, &pm, 4, 8, 64, 1, AX_PLAN_RECOMPUTE_OFF, AX_PLAN_RECOMPUTE_OFF, &r), AX_OK,
        "%s", ax_error_msg());
    cr_assert(r.n_best > 0, "sharded 4 ways it fits");
    for (int i = 0; i < r.n_best; i++) cr_assert(r.best[i].mem_total <= pm.m.mem_bytes);
    int single = 0;
    for (int i = 0; i < r.n_rejected; i++)
        if (r.rejected[i].dims[0] == 4) { /* pure data parallel: the whole state per device */
            single = 1;
            cr_assert(strstr(r.rejected[i].reason, "memory:"), "%s", r.rejected[i].reason);
            cr_assert(strstr(r.rejected[i].reason, "GiB"), "%s", r.rejected[i].reason);
        }
    cr_assert(single, "4x1x1x1 holds 0.44 GiB of state: must be rejected");
    ax_plan_result_free(&r);
    pm = tiny_memory(0.01); /* nothing fits */
    cr_assert_eq(
        ax_plan_rank(&c, &pm, 4, 8, 64, 1, AX_PLAN_RECOMPUTE_OFF, AX_PLAN_RECOMPUTE_OFF, &r),
        AX_OK);
    cr_assert_eq(r.n_best, 0);
    cr_assert_eq(r.n_rejected, r.n_grids);
    ax_plan_result_free(&r);
}

Test(plan, micro_batches_when_activations_do_not_fit) {
    ax_model_config c = small();
    ax_plan_machine pm = machine("a100");
    int dims[4] = {1, 1, 1, 1};
    ax_plan_pred one, four;
    cr_assert_eq(ax_perfmodel_predict(&c, &pm.m, dims, 64, 1024, 1, 1, 0, &one), AX_OK);
    cr_assert_eq(ax_perfmodel_predict(&c, &pm.m, dims, 64, 1024, 4, 1, 0, &four), AX_OK);
    cr_assert(four.mem_acts < one.mem_acts / 3.9, "activations scale with the micro-batch");
    pm.m.mem_bytes = (one.mem_total + four.mem_total) / 2;
    ax_plan_result r;
    cr_assert_eq(
        ax_plan_rank(&c, &pm, 1, 64, 1024, 1, AX_PLAN_RECOMPUTE_OFF, AX_PLAN_RECOMPUTE_OFF, &r),
        AX_OK);
    cr_assert_eq(r.n_best, 1);
    cr_assert(r.best[0].n_micro > 1 && r.best[0].n_micro <= 4, "n_micro %d", r.best[0].n_micro);
    ax_plan_result_free(&r);
}

Test(plan, overlap_hides_communication_up_to_compute) {
    ax_model_config c = small();
    ax_plan_machine pm = machine("frontier");
    int dims[4] = {1, 2, 2, 2};
    ax_plan_pred on, off;
    cr_assert_eq(ax_perfmodel_predict(&c, &pm.m, dims, 16, 512, 1, 1, 0, &on), AX_OK);
    cr_assert_eq(ax_perfmodel_predict(&c, &pm.m, dims, 16, 512, 1, 0, 0, &off), AX_OK);
    cr_assert(on.hidden_s > 0 && off.hidden_s == 0);
    cr_assert(on.step_s < off.step_s);
    cr_assert(on.hidden_s <= on.compute_s, "hidden %g > compute %g", on.hidden_s, on.compute_s);
    double comm = 0;
    for (int a = 0; a < AX_AXIS_COUNT; a++) {
        cr_assert(on.exposed_s[a] >= -1e-15 && on.exposed_s[a] <= on.comm_s[a] + 1e-15);
        comm += on.comm_s[a];
    }
    cr_assert(off.memory_s > 0);
    cr_assert_float_eq(off.step_s, off.compute_s + off.memory_s + comm, 1e-12 * off.step_s);
    /* the same bytes either way */
    cr_assert(!memcmp(&on.vol, &off.vol, sizeof on.vol));
}

Test(plan, one_device_is_compute_only) {
    ax_model_config c = small();
    ax_plan_machine pm = machine("h100");
    int dims[4] = {1, 1, 1, 1};
    ax_plan_pred p;
    cr_assert_eq(ax_perfmodel_predict(&c, &pm.m, dims, 8, 256, 1, 1, 0, &p), AX_OK);
    cr_assert_eq(p.step_s, p.compute_s + p.memory_s); /* no communication */
    double want = ax_model_flops_per_token(&c, 256) * 8 * 256;
    cr_assert_float_eq(p.flops_device, want, 1e-9 * want);
    cr_assert(p.mfu > 0 && p.mfu <= 1, "mfu %g", p.mfu);
    cr_assert_eq(ax_perfmodel_predict(&c, &pm.m, dims, 7, 256, 2, 1, 0, &p), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "--global-batch 7"), "%s", ax_error_msg());
}

Test(plan, machine_profiles, .init = ts_quiet, .fini = ts_cleanup) {
    for (const char *const *n = ax_plan_machine_names(); *n; n++) {
        ax_plan_machine pm = machine(*n);
        cr_assert(pm.m.gemm_flops > 0 && pm.m.mem_bytes > 0 && pm.m.bw[1] > 0 && pm.source[0]);
        /* round trip through the JSON form */
        ax_jw w;
        ax_jw_init(&w);
        ax_plan_machine_json(&pm, &w);
        ax_json *j = NULL;
        cr_assert_eq(ax_json_parse(ax_jw_text(&w), strlen(ax_jw_text(&w)), "t", &j), AX_OK);
        ax_plan_machine back;
        cr_assert_eq(ax_plan_machine_from_json(j, "t", &back), AX_OK, "%s", ax_error_msg());
        cr_assert_float_eq(back.m.gemm_flops, pm.m.gemm_flops, 1e-6 * pm.m.gemm_flops);
        cr_assert_float_eq(back.m.bw[1], pm.m.bw[1], 1e-6 * pm.m.bw[1]);
        cr_assert_eq(back.m.devices_per_node, pm.m.devices_per_node);
        ax_json_free(j);
        ax_jw_free(&w);
    }
    ax_plan_machine pm;
    ax_error_clear();
    cr_assert_eq(ax_plan_machine_load("no-such-machine", &pm), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "--machine no-such-machine") &&
                  strstr(ax_error_msg(), "frontier"),
              "%s", ax_error_msg());
    char path[64];
    snprintf(path, sizeof path, "/tmp/axmem_test_%d_m.json", (int)getpid());
    FILE *f = fopen(path, "w");
    fputs("{\"name\": \"x\", \"gemm_tflops\": 1}", f);
    fclose(f);
    ax_error_clear();
    cr_assert_eq(ax_plan_machine_load(path, &pm), AX_ERR_CORRUPT);
    cr_assert(strstr(ax_error_msg(), path) && strstr(ax_error_msg(), "gemm_half_dim"), "%s",
              ax_error_msg());
}

/* The prediction before the per-axis rule (commit 1c80b5d's perfmodel_predict.c: one overlap
 * fraction for every axis), written out again term for term from the public byte counts, as
 * the reference --overlap force (1) and off (0) must reproduce bit for bit. */
static void one_fraction_model(const ax_model_config *c, const ax_machine *m, const int dims[4],
                               int B, int T, int n_micro, int overlap, double compute_s,
                               double memory_s, double exposed[AX_AXIS_COUNT], double *hidden,
                               double *step) {
    ax_step_volume ph[3];
    ax_perfmodel_step_phases(c, dims, B, T, n_micro, 0, ph);
    double t[3][AX_AXIS_COUNT];
    for (int a = 0; a < AX_AXIS_COUNT; a++) {
        int p = a == AX_AXIS_BATCH   ? dims[0] * dims[3]
                : a == AX_AXIS_WORLD ? dims[0] * dims[1] * dims[2] * dims[3]
                                     : dims[a];
        int level = ax_perfmodel_axis_level(dims, (ax_axis)a, m->devices_per_node);
        for (int i = 0; i < 3; i++) {
            t[i][a] = 0;
            if (p == 1) continue;
            for (int k = 0; k < AX_COMM_KINDS; k++) {
                double s = a == AX_AXIS_WORLD ? 1.0 : m->elem_bytes / 4.0;
                double steps = k == AX_COMM_ALLREDUCE ? 2.0 * (p - 1) : (double)(p - 1);
                t[i][a] += ph[i].bytes[k][a] * s / m->bw[level] +
                           (double)ph[i].calls[k][a] * steps * m->lat[level];
            }
        }
        exposed[a] = t[0][a] + t[1][a] + t[2][a];
    }
    *hidden = 0;
    if (overlap) {
        double f = m->overlap, fwd = compute_s / 3, dw = compute_s / 3, L = c->n_layers;
        double bwd_ar = t[1][AX_AXIS_X] + t[1][AX_AXIS_Y];
        double oar = bwd_ar > 0 ? f * (bwd_ar < dw ? bwd_ar : dw) : 0;
        if (bwd_ar > 0) {
            exposed[AX_AXIS_X] -= oar * t[1][AX_AXIS_X] / bwd_ar;
            exposed[AX_AXIS_Y] -= oar * t[1][AX_AXIS_Y] / bwd_ar;
        }
        double ag = 0, rs = 0;
        double zb = ph[2].bytes[AX_COMM_ALLGATHER][AX_AXIS_Z] +
                    ph[2].bytes[AX_COMM_REDUCE_SCATTER][AX_AXIS_Z];
        if (zb > 0) {
            ag = t[2][AX_AXIS_Z] * ph[2].bytes[AX_COMM_ALLGATHER][AX_AXIS_Z] / zb;
            rs = t[2][AX_AXIS_Z] - ag;
        }
        double bwd_free = 2 * compute_s / 3 / n_micro - oar / n_micro;
        double bf = bwd_free > 0 ? bwd_free : 0, rl = rs * L / (L + 1), al = ag * L / (L + 1);
        double ors = f * (rl < bf ? rl : bf), oag = f * (al < fwd / n_micro ? al : fwd / n_micro);
        exposed[AX_AXIS_Z] -= ors + oag;
        *hidden = oar + ors + oag;
    }
    double comm = 0;
    for (int a = 0; a < AX_AXIS_COUNT; a++) comm += exposed[a];
    *step = compute_s + memory_s + comm; /* memory-bound passes (2026-12-02) hide nothing */
}

Test(plan, off_and_force_are_the_one_fraction_model_bit_for_bit) {
    ax_model_config c = small();
    const char *names[] = {"a100", "frontier", "perlmutter"};
    int worlds[] = {8, 16, 32}, cases = 0;
    for (int i = 0; i < 3; i++) {
        ax_plan_machine pm = machine(names[i]);
        for (int host = 0; host <= 1; host++) {
            pm.m.transport = host ? AX_TRANSPORT_HOST : AX_TRANSPORT_NCCL;
            pm.m.cores_per_node = host ? 64 : 0;
            FOR_GRIDS(worlds[i], dims) {
                if (ax_model_config_check_grid(&c, dims) != AX_OK) {
                    ax_error_clear();
                    continue;
                }
                int B = 64 / (dims[0] * dims[3]) / 2;
                if (B < 1) continue;
                for (int mode = 0; mode <= 1; mode++) {
                    ax_plan_pred p;
                    cr_assert_eq(ax_perfmodel_predict(&c, &pm.m, dims, 64, 256, 2, mode, 0, &p),
                                 AX_OK, "%s", ax_error_msg());
                    double ex[AX_AXIS_COUNT], hidden, step;
                    one_fraction_model(&c, &pm.m, dims, B, 256, 2, mode, p.compute_s, p.memory_s,
                                       ex, &hidden, &step);
                    cr_assert(p.step_s == step && p.hidden_s == hidden,
                              "%s %dx%dx%dx%d mode %d: step %.17g vs %.17g", names[i], dims[0],
                              dims[1], dims[2], dims[3], mode, p.step_s, step);
                    for (int a = 0; a < AX_AXIS_COUNT; a++) cr_assert(p.exposed_s[a] == ex[a]);
                    cases++;
                }
            }
        }
    }
    cr_assert(cases > 50, "%d cases", cases);
}

/* auto: the GPU profiles (NCCL) overlap every axis, so auto is force exactly; a host profile
 * keeps intra-node axes blocking and overlaps only the axes that span nodes */
Test(plan, auto_per_axis) {
    ax_model_config c = small();
    ax_plan_machine pm = machine("frontier");
    int dims[4] = {1, 2, 2, 2};
    ax_plan_pred a, f, o;
    cr_assert_eq(ax_perfmodel_predict(&c, &pm.m, dims, 16, 512, 1, AX_OVERLAP_AUTO, 0, &a), AX_OK);
    cr_assert_eq(ax_perfmodel_predict(&c, &pm.m, dims, 16, 512, 1, AX_OVERLAP_FORCE, 0, &f), AX_OK);
    cr_assert(a.step_s == f.step_s && a.hidden_s == f.hidden_s && a.hidden_s > 0);
    for (int x = 0; x < AX_AXIS_COUNT; x++) cr_assert(a.exposed_s[x] == f.exposed_s[x]);

    /* every rank on one host over MPI: auto is off */
    pm.m.transport = AX_TRANSPORT_HOST, pm.m.cores_per_node = 64;
    cr_assert_eq(ax_perfmodel_predict(&c, &pm.m, dims, 16, 512, 1, AX_OVERLAP_AUTO, 0, &a), AX_OK);
    cr_assert_eq(ax_perfmodel_predict(&c, &pm.m, dims, 16, 512, 1, AX_OVERLAP_OFF, 0, &o), AX_OK);
    cr_assert(a.step_s == o.step_s && a.hidden_s == 0);
    for (int x = 1; x <= 3; x++)
        cr_assert(!a.overlap_on[x] && strstr(a.overlap_why[x], "share one host"), "%s",
                  a.overlap_why[x]);

    /* 2 ranks a node: X inside a node (blocking), Y and Z across nodes (overlapped) */
    pm.m.devices_per_node = 2;
    cr_assert_eq(ax_perfmodel_predict(&c, &pm.m, dims, 16, 512, 1, AX_OVERLAP_AUTO, 0, &a), AX_OK);
    cr_assert_eq(ax_perfmodel_predict(&c, &pm.m, dims, 16, 512, 1, AX_OVERLAP_FORCE, 0, &f), AX_OK);
    cr_assert_eq(ax_perfmodel_predict(&c, &pm.m, dims, 16, 512, 1, AX_OVERLAP_OFF, 0, &o), AX_OK);
    cr_assert(!a.overlap_on[AX_AXIS_X] && a.overlap_on[AX_AXIS_Y] && a.overlap_on[AX_AXIS_Z]);
    cr_assert(a.exposed_s[AX_AXIS_X] == a.comm_s[AX_AXIS_X], "X stays exposed");
    cr_assert(a.exposed_s[AX_AXIS_Y] < a.comm_s[AX_AXIS_Y], "Y hides behind the dW GEMMs");
    cr_assert(a.exposed_s[AX_AXIS_Z] < a.comm_s[AX_AXIS_Z], "Z hides (ORS, OAG)");
    cr_assert(f.exposed_s[AX_AXIS_X] < f.comm_s[AX_AXIS_X], "forced hides X too");
    cr_assert(a.hidden_s > 0 && a.step_s < o.step_s, "auto %g, off %g", a.step_s, o.step_s);
    /* a bad mode is refused */
    cr_assert_eq(ax_perfmodel_predict(&c, &pm.m, dims, 16, 512, 1, 3, 0, &a), AX_ERR_ARG);
}

/* Activation recomputation (train --recompute): less activation memory, the extra forward in
 * recompute_s (under a third of the step's compute: no down projection, no LM head, not the
 * top layer), and the planner takes it only where keeping every activation does not fit. */
Test(plan, recompute_trades_compute_for_activation_memory) {
    ax_model_config c = small();
    c.n_layers = 16; /* deep enough that the layers' activations outweigh the logits */
    ax_plan_machine pm = machine("a100");
    int dims[4] = {1, 1, 1, 1};
    ax_plan_pred keep, rc;
    cr_assert_eq(ax_perfmodel_predict(&c, &pm.m, dims, 1, 2048, 1, 1, 0, &keep), AX_OK);
    cr_assert_eq(ax_perfmodel_predict(&c, &pm.m, dims, 1, 2048, 1, 1, 1, &rc), AX_OK);
    cr_assert(!keep.recompute && rc.recompute);
    cr_assert_eq(keep.recompute_s, 0);
    cr_assert(rc.mem_acts < keep.mem_acts / 2, "activations %g with recompute, %g without",
              rc.mem_acts, keep.mem_acts);
    cr_assert(rc.recompute_s > keep.compute_s / 10 && rc.recompute_s < keep.compute_s / 3,
              "recompute %g s of compute %g s", rc.recompute_s, keep.compute_s);
    cr_assert_eq(rc.compute_s, keep.compute_s); /* model FLOPs: the same work */
    cr_assert(rc.step_s > keep.step_s && rc.mfu < keep.mfu);
    ax_plan_result r;
    /* room for the recomputing model only: off rejects, auto and on recompute */
    pm.m.mem_bytes = (rc.mem_total + keep.mem_total) / 2;
    cr_assert_eq(ax_plan_rank(&c, &pm, 1, 1, 2048, 1, AX_PLAN_RECOMPUTE_OFF, 0, &r), AX_OK);
    cr_assert_eq(r.n_best, 0);
    cr_assert(strstr(r.rejected[0].reason, "memory:"), "%s", r.rejected[0].reason);
    ax_plan_result_free(&r);
    for (int mode = AX_PLAN_RECOMPUTE_ON; mode <= AX_PLAN_RECOMPUTE_AUTO; mode++) {
        cr_assert_eq(ax_plan_rank(&c, &pm, 1, 1, 2048, 1, mode, 0, &r), AX_OK);
        cr_assert_eq(r.n_best, 1);
        cr_assert(r.best[0].recompute, "mode %d", mode);
        ax_plan_result_free(&r);
    }
    /* room for both: auto keeps the activations (faster), on still recomputes */
    pm.m.mem_bytes = 2 * keep.mem_total;
    cr_assert_eq(ax_plan_rank(&c, &pm, 1, 1, 2048, 1, AX_PLAN_RECOMPUTE_AUTO, 0, &r), AX_OK);
    cr_assert(r.n_best == 1 && !r.best[0].recompute);
    ax_plan_result_free(&r);
    cr_assert_eq(ax_plan_rank(&c, &pm, 1, 1, 2048, 1, AX_PLAN_RECOMPUTE_ON, 0, &r), AX_OK);
    cr_assert(r.n_best == 1 && r.best[0].recompute);
    ax_plan_result_free(&r);
    cr_assert_eq(ax_plan_rank(&c, &pm, 1, 1, 2048, 1, 3, 0, &r), AX_ERR_ARG);
    ax_error_clear();
}

/* --engine axmem on a GPU profile (axmem_cuda): the CUDA engine's bf16 run. Activations as
 * the fp32 engine's but the GEMM-only ones (ln1, ln2, hs per layer, lnf, SwiGLU's dh) at 2
 * bytes in rows padded to 8; collectives at 4 bytes (the engine's fp32 all-reduces); the weight
 * cache, the staging slots and the attention blocks on top. The all-bf16 engine (elem_bytes 2)
 * below it. */
Test(plan, axmem_cuda_engine_memory_and_communication) {
    ax_model_config c = small();
    c.ffn = 1372; /* Fy = 686 on Y = 2: bf16 rows padded to 688 */
    ax_plan_machine pm = machine("h100");
    int dims[4] = {1, 2, 2, 2};
    int B = 2, T = 256, L = c.n_layers; /* per rank: the global batch 2 B over D x Z = 2 */
    ax_plan_pred bf16, fp32, cuda;
    cr_assert_eq(pm.m.elem_bytes, 2);
    cr_assert_eq(ax_perfmodel_predict(&c, &pm.m, dims, 2 * B, T, 1, 2, 0, &bf16), AX_OK);
    pm.m.elem_bytes = 4;
    cr_assert_eq(ax_perfmodel_predict(&c, &pm.m, dims, 2 * B, T, 1, 2, 0, &fp32), AX_OK);
    pm.m.elem_bytes = 2, pm.m.axmem_cuda = 1; /* the profile's 2 no longer applies */
    cr_assert_eq(ax_perfmodel_predict(&c, &pm.m, dims, 2 * B, T, 1, 2, 0, &cuda), AX_OK);
    double N = (double)B * T, Cx = c.dim / 2.0, Fy = c.ffn / 2.0;
    /* ln1, ln2, hs per layer and lnf; the SwiGLU gradient dh [N, 2 Fy] (no biases) */
    double saved = L * N * (4 * (2 * Cx + Fy) - 2 * (2 * Cx + 688)) + N * (4 * Cx - 2 * Cx) +
                   N * (4 * 2 * Fy - 2 * 1376); /* 2 Fy = 1372 padded to 1376 */
    cr_assert_float_eq(fp32.mem_acts - cuda.mem_acts, saved, 1e-6 * saved, "%g vs %g",
                       fp32.mem_acts - cuda.mem_acts, saved);
    cr_assert(bf16.mem_acts < cuda.mem_acts);
    cr_assert_eq(cuda.mem_gathered, fp32.mem_gathered); /* fp32 blocks */
    cr_assert(cuda.mem_gathered > bf16.mem_gathered);
    cr_assert(cuda.mem_device > 0 && fp32.mem_device == 0 && bf16.mem_device == 0);
    cr_assert_float_eq(cuda.mem_total,
                       cuda.mem_state + cuda.mem_gathered + cuda.mem_acts + cuda.mem_device, 1);
    for (int a = 0; a < AX_AXIS_COUNT; a++) {
        cr_assert_eq(cuda.comm_s[a], fp32.comm_s[a], "axis %d: fp32 collectives", a);
        if (a != AX_AXIS_WORLD && fp32.comm_s[a] > 0)
            cr_assert(bf16.comm_s[a] < fp32.comm_s[a], "axis %d: bf16 moves half the bytes", a);
    }
    /* the GEMMs at the same rate; the attention by its score blocks' bytes at mem_bw (31.6 +
     * 51.3 bytes an element of B x H/Y x T x T a layer), not its FLOPs at the GEMM rate */
    double scores = B * (c.n_heads / 2.0) * T * (double)T * L;
    cr_assert_float_eq(cuda.attn_s, scores * (31.6 + 51.3) / pm.m.mem_bw, 1e-12 * cuda.attn_s,
                       "%.17g", cuda.attn_s);
    double att_flops = N * 12.0 * L * c.dim * T / 2; /* the model's 12 L C T a token, over Y */
    cr_assert_float_eq(fp32.attn_s, att_flops / (pm.m.gemm_flops * fp32.gemm_eff),
                       1e-12 * fp32.attn_s);
    cr_assert_float_eq(cuda.compute_s - cuda.attn_s, fp32.compute_s - fp32.attn_s,
                       1e-12 * fp32.compute_s);
    cr_assert(cuda.attn_s > fp32.attn_s); /* the blocked kernels are slower than their FLOPs */
    cr_assert(cuda.step_s >= bf16.step_s);
    /* recomputation repeats L - 1 layers' attention forward: its 31.6 bytes an element */
    ax_plan_pred rc_cuda, rc_fp32;
    cr_assert_eq(ax_perfmodel_predict(&c, &pm.m, dims, 2 * B, T, 1, 2, AX_PERF_RECOMPUTE, &rc_cuda),
                 AX_OK);
    pm.m.axmem_cuda = 0, pm.m.elem_bytes = 4;
    cr_assert_eq(ax_perfmodel_predict(&c, &pm.m, dims, 2 * B, T, 1, 2, AX_PERF_RECOMPUTE, &rc_fp32),
                 AX_OK);
    double want = 31.6 * scores / pm.m.mem_bw * (L - 1) / L - fp32.attn_s / 3 * (L - 1) / L;
    cr_assert_float_eq(rc_cuda.recompute_s - rc_fp32.recompute_s, want, 1e-9 * rc_cuda.recompute_s,
                       "%.17g vs %.17g", rc_cuda.recompute_s - rc_fp32.recompute_s, want);
}

/* The memory-bound passes on one device, counted by hand from the op list of
 * perfmodel_predict.c's memory(): 32 bytes a parameter (AdamW's 7 streams and the norm's read),
 * per token and layer (10 + 16) C + (7/3 + 10/3) 3C + 2 C + (3 + 5) F fp32 elements, and 4
 * passes over the fp32 logits; with micro-batches the activations' share repeats, the
 * optimizer's does not; no mem_bw (an old profile) prices nothing. */
Test(plan, memory_bound_passes_counted_by_hand) {
    ax_model_config c = small();
    ax_plan_machine pm = machine("h100");
    pm.m.axmem_cuda = 0, pm.m.elem_bytes = 4;
    int dims[4] = {1, 1, 1, 1}, B = 8, T = 256;
    ax_plan_pred one, two;
    cr_assert_eq(ax_perfmodel_predict(&c, &pm.m, dims, B, T, 1, 0, 0, &one), AX_OK);
    cr_assert_eq(ax_perfmodel_predict(&c, &pm.m, dims, B, T, 2, 0, 0, &two), AX_OK);
    double C = c.dim, F = c.ffn, L = c.n_layers, N = (double)B * T;
    double params = (double)ax_model_config_n_params(&c);
    double per_tok_layer = 26 * C + (7.0 / 3 + 10.0 / 3) * 3 * C + 2 * C + 8 * F;
    double want = 32 * params + 4 * N * L * per_tok_layer + 16 * N * c.vocab;
    cr_assert_float_eq(one.stream_bytes, want, 1e-9 * want, "%.17g vs %.17g", one.stream_bytes,
                       want);
    cr_assert_float_eq(one.memory_s, want / pm.m.mem_bw, 1e-12 * one.memory_s);
    /* two micro-batches of B / 2: the same activations' bytes, the optimizer's once */
    cr_assert_float_eq(two.stream_bytes, want, 1e-9 * want);
    pm.m.mem_bw = 0;
    cr_assert_eq(ax_perfmodel_predict(&c, &pm.m, dims, B, T, 1, 0, 0, &one), AX_OK);
    cr_assert(one.memory_s == 0 && one.step_s == one.compute_s);
}

/* train --grad-comm bf16 priced (ax_machine.grad_bf16): the data all-reduce carries only
 * gradients, so its bytes halve exactly (its latency terms stay); Z's reduce-scatters halve
 * but its weight all-gathers stay fp32; X and Y do not change. Memory grows by
 * model_gradcomm.c's bf16 staging: the local gradients for the data axis, the full blocks and
 * their shards for Z. An engine whose collectives are bf16 already (elem_bytes 2) is unchanged. */
Test(plan, grad_comm_bf16_halves_gradient_bytes) {
    ax_model_config c = small();
    ax_plan_machine pm = machine("h100");
    pm.m.axmem_cuda = 1;
    int dims[4] = {2, 1, 1, 2};
    ax_plan_pred fp32, bf16, fp32_0, bf16_0;
    cr_assert_eq(ax_perfmodel_predict(&c, &pm.m, dims, 8, 256, 1, 0, 0, &fp32), AX_OK);
    pm.m.grad_bf16 = 1;
    cr_assert_eq(ax_perfmodel_predict(&c, &pm.m, dims, 8, 256, 1, 0, 0, &bf16), AX_OK);
    cr_assert_eq(bf16.comm_s[AX_AXIS_X], fp32.comm_s[AX_AXIS_X]);
    cr_assert_eq(bf16.comm_s[AX_AXIS_Y], fp32.comm_s[AX_AXIS_Y]);
    double d32 = fp32.comm_s[AX_AXIS_DATA], d16 = bf16.comm_s[AX_AXIS_DATA];
    cr_assert(d32 > 0 && d16 < d32, "data: %g vs %g", d16, d32);
    cr_assert(2 * d16 - d32 > 0, "the latency terms stay"); /* t = bytes/bw + calls lat */
    double z32 = fp32.comm_s[AX_AXIS_Z], z16 = bf16.comm_s[AX_AXIS_Z];
    cr_assert(z16 < z32 && z16 > z32 / 2, "Z: %g vs %g (the all-gathers stay fp32)", z16, z32);
    /* local = mem_state / 16, full = mem_gathered / 8 (fp32 blocks and gradient blocks) */
    double local = fp32.mem_state / 16, full = fp32.mem_gathered / 8;
    double staging = 2 * local + 2 * (full + local);
    cr_assert_float_eq(bf16.mem_device - fp32.mem_device, staging, 1e-9 * staging, "%g vs %g",
                       bf16.mem_device - fp32.mem_device, staging);
    cr_assert_float_eq(bf16.mem_total - fp32.mem_total, staging, 1e-9 * staging);
    cr_assert(bf16.step_s <= fp32.step_s);
    /* the all-bf16 engine: nothing to halve */
    pm.m.axmem_cuda = 0, pm.m.grad_bf16 = 0;
    cr_assert_eq(ax_perfmodel_predict(&c, &pm.m, dims, 8, 256, 1, 0, 0, &fp32_0), AX_OK);
    pm.m.grad_bf16 = 1;
    cr_assert_eq(ax_perfmodel_predict(&c, &pm.m, dims, 8, 256, 1, 0, 0, &bf16_0), AX_OK);
    for (int a = 0; a < AX_AXIS_COUNT; a++) cr_assert_eq(bf16_0.comm_s[a], fp32_0.comm_s[a]);
    cr_assert_eq(bf16_0.mem_total, fp32_0.mem_total);
}
