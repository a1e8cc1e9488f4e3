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
#include "lib/model/model.h"
#include "lib/model/perfmodel.h"
#include "plan/plan.h"
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
        cr_assert_eq(ax_plan_rank(&c, &pm, dev[i], 48, 128, 1, &r), AX_OK, "%s", ax_error_msg());
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
    cr_assert_eq(ax_plan_rank(&c, &pm, 4, 8, 64, 1, &r), AX_OK, "%s", ax_error_msg());
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
    int odd[4] = {1, 3, 1, 1}; /* 3 ranks do not tile a node of 4: some groups cross */
    cr_assert_eq(ax_perfmodel_axis_level(odd, AX_AXIS_X, 4), AX_LEVEL_NET);
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
    cr_assert_eq(ax_perfmodel_predict(&c, &pm.m, dims, 1, 8, 1, 1, &p), AX_OK);
    cr_assert_eq(p.mem_state, 16.0 * (double)ax_model_n_local(m), "%.0f vs 16 x %lld", p.mem_state,
                 (long long)ax_model_n_local(m));
    ax_model_free(m);
    /* ZeRO over Z shards it: 4 ranks hold about a quarter each */
    int z4[4] = {1, 1, 1, 4};
    ax_plan_pred q;
    cr_assert_eq(ax_perfmodel_predict(&c, &pm.m, z4, 4, 8, 1, 1, &q), AX_OK);
    cr_assert(q.mem_state < p.mem_state / 3.9 && q.mem_state >= p.mem_state / 4);
    cr_assert(q.mem_gathered > 0 && p.mem_gathered == 0);
    /* and is exactly the shard the data all-reduce sends: 2 (p-1)/p x n_local x 4 bytes */
    int dz[4] = {2, 2, 1, 2};
    cr_assert_eq(ax_perfmodel_predict(&c, &pm.m, dz, 8, 8, 1, 1, &q), AX_OK);
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
        cr_assert_eq(ax_perfmodel_predict(&cs[k], &pm.m, dims, 1, 8, 1, 1, &p), AX_OK);
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
    ax_perfmodel_step_volume(&mha, x2, 1, 8, 1, &vm);
    ax_perfmodel_step_volume(&gqa, x2, 1, 8, 1, &vg);
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
    cr_assert_eq(ax_plan_rank(&c, &pm, 4, 8, 64, 1, &r), AX_OK, "%s", ax_error_msg());
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
    cr_assert_eq(ax_plan_rank(&c, &pm, 4, 8, 64, 1, &r), AX_OK);
    cr_assert_eq(r.n_best, 0);
    cr_assert_eq(r.n_rejected, r.n_grids);
    ax_plan_result_free(&r);
}

Test(plan, micro_batches_when_activations_do_not_fit) {
    ax_model_config c = small();
    ax_plan_machine pm = machine("a100");
    int dims[4] = {1, 1, 1, 1};
    ax_plan_pred one, four;
    cr_assert_eq(ax_perfmodel_predict(&c, &pm.m, dims, 64, 1024, 1, 1, &one), AX_OK);
    cr_assert_eq(ax_perfmodel_predict(&c, &pm.m, dims, 64, 1024, 4, 1, &four), AX_OK);
    cr_assert(four.mem_acts < one.mem_acts / 3.9, "activations scale with the micro-batch");
    pm.m.mem_bytes = (one.mem_total + four.mem_total) / 2;
    ax_plan_result r;
    cr_assert_eq(ax_plan_rank(&c, &pm, 1, 64, 1024, 1, &r), AX_OK);
    cr_assert_eq(r.n_best, 1);
    cr_assert(r.best[0].n_micro > 1 && r.best[0].n_micro <= 4, "n_micro %d", r.best[0].n_micro);
    ax_plan_result_free(&r);
}

Test(plan, overlap_hides_communication_up_to_compute) {
    ax_model_config c = small();
    ax_plan_machine pm = machine("frontier");
    int dims[4] = {1, 2, 2, 2};
    ax_plan_pred on, off;
    cr_assert_eq(ax_perfmodel_predict(&c, &pm.m, dims, 16, 512, 1, 1, &on), AX_OK);
    cr_assert_eq(ax_perfmodel_predict(&c, &pm.m, dims, 16, 512, 1, 0, &off), AX_OK);
    cr_assert(on.hidden_s > 0 && off.hidden_s == 0);
    cr_assert(on.step_s < off.step_s);
    cr_assert(on.hidden_s <= on.compute_s, "hidden %g > compute %g", on.hidden_s, on.compute_s);
    double comm = 0;
    for (int a = 0; a < AX_AXIS_COUNT; a++) {
        cr_assert(on.exposed_s[a] >= -1e-15 && on.exposed_s[a] <= on.comm_s[a] + 1e-15);
        comm += on.comm_s[a];
    }
    cr_assert_float_eq(off.step_s, off.compute_s + comm, 1e-12 * off.step_s);
    /* the same bytes either way */
    cr_assert(!memcmp(&on.vol, &off.vol, sizeof on.vol));
}

Test(plan, one_device_is_compute_only) {
    ax_model_config c = small();
    ax_plan_machine pm = machine("h100");
    int dims[4] = {1, 1, 1, 1};
    ax_plan_pred p;
    cr_assert_eq(ax_perfmodel_predict(&c, &pm.m, dims, 8, 256, 1, 1, &p), AX_OK);
    cr_assert_eq(p.step_s, p.compute_s);
    double want = ax_model_flops_per_token(&c, 256) * 8 * 256;
    cr_assert_float_eq(p.flops_device, want, 1e-9 * want);
    cr_assert(p.mfu > 0 && p.mfu <= 1, "mfu %g", p.mfu);
    cr_assert_eq(ax_perfmodel_predict(&c, &pm.m, dims, 7, 256, 2, 1, &p), AX_ERR_ARG);
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
