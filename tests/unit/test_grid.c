/* The grid and collectives in one process: parsing, the layout formula, the serial grid (every
 * collective a local copy), the traffic formulas and counters. MPI behaviour is tested by
 * tests/mpi/mpi_comm.c under mpirun: Criterion forks each test, so MPI_Init never runs here. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "lib/dist/comm.h"
#include "lib/dist/grid.h"
#include "lib/dist/grid_mpi.h"
#include "lib/dist/overlap.h"
#include "lib/core/json.h"
#include "lib/dist/mpienv.h"

static void parse_ok(const char *spec, int d, int x, int y, int z) {
    int dims[4] = {0};
    ax_error_clear();
    cr_assert_eq(ax_grid_parse(spec, dims), AX_OK, "%s: %s", spec, ax_error_msg());
    cr_assert(dims[0] == d && dims[1] == x && dims[2] == y && dims[3] == z, "%s -> %dx%dx%dx%d",
              spec, dims[0], dims[1], dims[2], dims[3]);
}

static void parse_bad(const char *spec) {
    int dims[4];
    ax_error_clear();
    cr_assert_eq(ax_grid_parse(spec, dims), AX_ERR_ARG, "'%s' should be rejected", spec);
    const char *m = ax_error_msg();
    cr_assert(strstr(m, "--grid"), "message names --grid: %s", m);
    cr_assert(strstr(m, spec), "message quotes the text: %s", m);
    cr_assert(strstr(m, "DxXxYxZ"), "message says the format: %s", m);
}

Test(grid, parse_good) {
    parse_ok("1x1x1x1", 1, 1, 1, 1);
    parse_ok("2x2x2x1", 2, 2, 2, 1);
    parse_ok("8x1x4x2", 8, 1, 4, 2);
    parse_ok("1X3x1x16", 1, 3, 1, 16);
}

Test(grid, parse_bad) {
    const char *bad[] = {"",         "2",         "2x2x2",    "2x2x2x2x2",
                         "0x1x1x1",  "1x-1x1x1",  "ax1x1x1",  "2x2x2x1 ",
                         " 2x2x2x1", "2x2x2x1x",  "2,2,2,1",  "1x1x1x99999999999",
                         "2xx2x1",   "010x1x1x1", "1x02x1x1", "1x1x1x00",
                         "1x+2x1x1", "1x 2x1x1",  "1x0x1x1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) parse_bad(bad[i]);
    int dims[4];
    ax_error_clear();
    cr_assert_eq(ax_grid_parse(NULL, dims), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "--grid"));
}

Test(grid, layout_formula_roundtrip) {
    const int dims[4] = {2, 3, 2, 4}; /* D, X, Y, Z */
    int n = 2 * 3 * 2 * 4;
    for (int r = 0; r < n; r++) {
        int c[4];
        ax_grid_coords_of(dims, r, c);
        /* rank = ((d*Gz + z)*Gy + y)*Gx + x */
        cr_assert_eq(((c[0] * 4 + c[3]) * 2 + c[2]) * 3 + c[1], r);
        cr_assert_eq(ax_grid_rank_of(dims, c), r);
    }
    int c1[4] = {0, 1, 0, 0};
    cr_assert_eq(ax_grid_rank_of(dims, c1), 1, "X is innermost");
}

Test(grid, serial_grid) {
    cr_assert_eq(ax_mpi_active(), 0);
    cr_assert_eq(ax_mpi_world_size(), 1);
    cr_assert_eq(ax_mpi_world_rank(), 0);
    int dims[4];
    cr_assert_eq(ax_grid_parse("1x1x1x1", dims), AX_OK);
    ax_grid_t *g = NULL;
    cr_assert_eq(ax_grid_create(dims, &g), AX_OK, "%s", ax_error_msg());
    cr_assert_str_eq(ax_grid_spec(g), "1x1x1x1");
    cr_assert_eq(ax_grid_rank(g), 0);
    cr_assert_eq(ax_grid_size(g), 1);
    cr_assert_eq(ax_grid_uses_mpi(g), 0);
    for (int a = 0; a < AX_AXIS_COUNT; a++) {
        cr_assert_eq(ax_grid_dim(g, (ax_axis)a), 1);
        cr_assert_eq(ax_grid_coord(g, (ax_axis)a), 0);
    }
    cr_assert_str_eq(ax_axis_name(AX_AXIS_BATCH), "batch");
    ax_grid_free(g);
    ax_grid_free(NULL);
    cr_assert_eq(ax_grid_create_serial(&g), AX_OK);
    cr_assert_str_eq(ax_grid_spec(g), "1x1x1x1");
    ax_grid_free(g);
}

Test(grid, non_one_grid_without_mpi_fails_clearly) {
    int dims[4] = {2, 1, 1, 1};
    ax_grid_t *g = (ax_grid_t *)1;
    ax_error_clear();
    cr_assert_eq(ax_grid_create(dims, &g), AX_ERR_ARG);
    cr_assert_null(g);
    const char *m = ax_error_msg();
    cr_assert(strstr(m, "--grid 2x1x1x1 needs 2 MPI ranks"), "%s", m);
    cr_assert(strstr(m, "mpirun -np 2"), "%s", m);
    int dims2[4] = {2, 2, 2, 1};
    ax_error_clear();
    cr_assert_eq(ax_grid_create(dims2, &g), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "mpirun -np 8"), "%s", ax_error_msg());
}

Test(grid, serial_collectives_are_copies) {
    ax_grid_t *g;
    cr_assert_eq(ax_grid_create_serial(&g), AX_OK);
    float a[5] = {1, -2, 3.5f, 4, 5}, b[5], ref[5];
    memcpy(ref, a, sizeof a);
    for (int ax = 0; ax < AX_AXIS_COUNT; ax++) {
        ax_axis axis = (ax_axis)ax;
        cr_assert_eq(ax_coll_allreduce(g, axis, a, 5, AX_DT_F32, AX_OP_SUM), AX_OK);
        cr_assert_eq(ax_coll_allreduce(g, axis, a, 5, AX_DT_F32, AX_OP_MAX), AX_OK);
        cr_assert_arr_eq(a, ref, sizeof a);
        memset(b, 0, sizeof b);
        cr_assert_eq(ax_coll_allgather(g, axis, a, 5, b, AX_DT_F32), AX_OK);
        cr_assert_arr_eq(b, ref, sizeof b);
        memset(b, 0, sizeof b);
        cr_assert_eq(ax_coll_reduce_scatter(g, axis, a, b, 5, AX_DT_F32, AX_OP_SUM), AX_OK);
        cr_assert_arr_eq(b, ref, sizeof b);
        cr_assert_eq(ax_coll_bcast(g, axis, a, 5, AX_DT_F32, 0), AX_OK);
        cr_assert_arr_eq(a, ref, sizeof a);
        cr_assert_eq(ax_barrier(g, axis), AX_OK);
        double d[2] = {1.5, 2.5};
        cr_assert_eq(ax_coll_allreduce(g, axis, d, 2, AX_DT_F64, AX_OP_SUM), AX_OK);
        cr_assert(d[0] == 1.5 && d[1] == 2.5);

        ax_req r;
        memset(b, 0, sizeof b);
        cr_assert_eq(ax_coll_iallgather(g, axis, a, 5, b, AX_DT_F32, &r), AX_OK);
        cr_assert_eq(ax_test(&r), 1, "serial requests complete at issue");
        cr_assert_eq(ax_wait(&r), AX_OK);
        cr_assert_arr_eq(b, ref, sizeof b);
        memset(b, 0, sizeof b);
        cr_assert_eq(ax_coll_ireduce_scatter(g, axis, a, b, 5, AX_DT_F32, AX_OP_SUM, &r), AX_OK);
        cr_assert_eq(ax_wait(&r), AX_OK);
        cr_assert_arr_eq(b, ref, sizeof b);
        cr_assert_eq(ax_coll_iallreduce(g, axis, a, 5, AX_DT_F32, AX_OP_SUM, &r), AX_OK);
        cr_assert_eq(ax_test(&r), 1);
        cr_assert_eq(ax_wait(&r), AX_OK);
        cr_assert_arr_eq(a, ref, sizeof a);
    }
    ax_req zero = {0};
    cr_assert_eq(ax_test(&zero), 1, "a zeroed request is complete");
    cr_assert_eq(ax_wait(&zero), AX_OK);

    ax_error_clear();
    cr_assert_eq(ax_coll_bcast(g, AX_AXIS_X, a, 5, AX_DT_F32, 1), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "root"), "%s", ax_error_msg());
    ax_error_clear();
    cr_assert_eq(ax_coll_allreduce(g, AX_AXIS_X, a, -1, AX_DT_F32, AX_OP_SUM), AX_ERR_ARG);
    ax_error_clear();
    cr_assert_eq(ax_coll_allreduce(g, (ax_axis)17, a, 1, AX_DT_F32, AX_OP_SUM), AX_ERR_ARG);
    ax_error_clear();
    cr_assert(ax_grid_mpi_comm(g, AX_AXIS_WORLD) == MPI_COMM_NULL);
    ax_grid_free(g);
}

Test(grid, volume_formulas) {
    /* p == 1 costs nothing */
    for (int k = 0; k < AX_COMM_KINDS; k++)
        cr_assert_eq(ax_comm_volume((ax_comm_kind)k, 1, 1000, 4), 0.0);
    cr_assert_eq(ax_comm_volume(AX_COMM_ALLREDUCE, 2, 1000, 4), 4000.0);   /* 2*(1/2)*4000 */
    cr_assert_eq(ax_comm_volume(AX_COMM_ALLREDUCE, 4, 1000, 4), 6000.0);   /* 2*(3/4)*4000 */
    cr_assert_eq(ax_comm_volume(AX_COMM_ALLGATHER, 4, 1000, 4), 12000.0);  /* 3*4000 */
    cr_assert_eq(ax_comm_volume(AX_COMM_REDUCE_SCATTER, 8, 10, 4), 280.0); /* 7*40 */
    cr_assert_eq(ax_comm_volume(AX_COMM_BCAST, 4, 1000, 4), 3000.0);       /* 3/4*4000 */
    cr_assert_eq(ax_comm_volume(AX_COMM_ALLREDUCE, 2, 3, 8), 24.0);        /* f64 */
    cr_assert_eq(ax_comm_volume(AX_COMM_ALLGATHER, 4, 0, 4), 0.0);
    /* an allreduce moves as much as a reduce-scatter plus an all-gather of the blocks */
    double rs_ag = ax_comm_volume(AX_COMM_REDUCE_SCATTER, 4, 250, 4) +
                   ax_comm_volume(AX_COMM_ALLGATHER, 4, 250, 4);
    cr_assert_float_eq(ax_comm_volume(AX_COMM_ALLREDUCE, 4, 1000, 4), rs_ag, 1e-9);
    cr_assert_str_eq(ax_comm_kind_name(AX_COMM_REDUCE_SCATTER), "reduce_scatter");
}

Test(grid, stats_on_serial_grid) {
    ax_grid_t *g;
    cr_assert_eq(ax_grid_create_serial(&g), AX_OK);
    float a[8] = {0}, b[8];
    ax_req r;
    cr_assert_eq(ax_coll_allreduce(g, AX_AXIS_X, a, 8, AX_DT_F32, AX_OP_SUM), AX_OK);
    cr_assert_eq(ax_coll_allreduce(g, AX_AXIS_X, a, 8, AX_DT_F32, AX_OP_SUM), AX_OK);
    cr_assert_eq(ax_coll_iallreduce(g, AX_AXIS_DATA, a, 8, AX_DT_F32, AX_OP_SUM, &r), AX_OK);
    cr_assert_eq(ax_wait(&r), AX_OK);
    cr_assert_eq(ax_coll_allgather(g, AX_AXIS_Z, a, 8, b, AX_DT_F32), AX_OK);
    cr_assert_eq(ax_coll_ireduce_scatter(g, AX_AXIS_Z, a, b, 8, AX_DT_F32, AX_OP_SUM, &r), AX_OK);
    cr_assert_eq(ax_wait(&r), AX_OK);
    cr_assert_eq(ax_coll_bcast(g, AX_AXIS_Y, a, 8, AX_DT_F32, 0), AX_OK);
    ax_comm_stats s;
    ax_comm_stats_get(g, &s);
    cr_assert_eq(s.calls[AX_COMM_ALLREDUCE][AX_AXIS_X], 2);
    cr_assert_eq(s.calls[AX_COMM_ALLREDUCE][AX_AXIS_DATA], 1);
    cr_assert_eq(s.calls[AX_COMM_ALLGATHER][AX_AXIS_Z], 1);
    cr_assert_eq(s.calls[AX_COMM_REDUCE_SCATTER][AX_AXIS_Z], 1);
    cr_assert_eq(s.calls[AX_COMM_BCAST][AX_AXIS_Y], 1);
    cr_assert_eq(s.calls[AX_COMM_BCAST][AX_AXIS_X], 0);
    cr_assert_eq(ax_comm_stats_bytes_total(&s), 0.0, "size-1 axes send nothing");
    cr_assert_eq(s.wait_s_total, 0.0);

    ax_jw w;
    ax_jw_init(&w);
    ax_comm_stats_json(&s, &w);
    const char *t = ax_jw_text(&w);
    cr_assert_not_null(t);
    ax_json *v = NULL;
    cr_assert_eq(ax_json_parse(t, strlen(t), "stats", &v), AX_OK, "%s", t);
    const ax_json *calls = ax_json_get(ax_json_get(v, "comm_calls"), "allreduce");
    double x = -1;
    cr_assert_eq(ax_json_get_num(calls, "x", "stats", &x), AX_OK);
    cr_assert_eq(x, 2.0);
    const ax_json *bytes = ax_json_get(ax_json_get(v, "comm_bytes"), "reduce_scatter");
    cr_assert_eq(ax_json_get_num(bytes, "z", "stats", &x), AX_OK);
    cr_assert_eq(x, 0.0);
    cr_assert_eq(ax_json_get_num(v, "comm_wait_s", "stats", &x), AX_OK);
    ax_json_free(v);
    ax_jw_free(&w);

    ax_comm_stats_reset(g);
    ax_comm_stats_get(g, &s);
    cr_assert_eq(s.calls[AX_COMM_ALLREDUCE][AX_AXIS_X], 0);
    ax_grid_free(g);
}

Test(grid, bf16_and_local_combine) {
    /* round to nearest even: 1 + 2^-8 is a tie between 1 and 1 + 2^-7 -> 1 (even) */
    cr_assert_eq(ax_f32_to_bf16(1.0f), 0x3f80);
    cr_assert_eq(ax_f32_to_bf16(1.0f + 0x1p-8f), 0x3f80);
    cr_assert_eq(ax_f32_to_bf16(1.0f + 0x1p-7f + 0x1p-8f), 0x3f82, "tie rounds up to even");
    cr_assert_eq(ax_f32_to_bf16(1.0f + 0x1p-8f + 0x1p-12f), 0x3f81, "above the tie rounds up");
    cr_assert_eq(ax_f32_to_bf16(-2.0f), 0xc000);
    uint16_t nan = ax_f32_to_bf16(__builtin_nanf(""));
    cr_assert((nan & 0x7f80) == 0x7f80 && (nan & 0x7f) != 0, "NaN stays NaN: %04x", nan);
    cr_assert_eq(ax_f32_to_bf16(3.0e38f), 0x7f62); /* 0x7f61b1e6 rounds up, stays finite */
    cr_assert_eq(ax_f32_to_bf16(3.4e38f), 0x7f80, "past the largest bf16: infinity");
    for (int v = -256; v <= 256; v++) /* integers up to 2^8 are exact */
        cr_assert_eq(ax_bf16_to_f32(ax_f32_to_bf16((float)v)), (float)v);

    /* bf16 sum: 256 + 1 is not a bf16 (8 significant bits): the combine rounds (to even) */
    uint16_t acc[3] = {ax_f32_to_bf16(256), ax_f32_to_bf16(3), ax_f32_to_bf16(-1)};
    uint16_t in[3] = {ax_f32_to_bf16(1), ax_f32_to_bf16(4), ax_f32_to_bf16(-7)};
    ax_reduce_local(AX_DT_BF16, AX_OP_SUM, acc, in, 3);
    cr_assert_eq(ax_bf16_to_f32(acc[0]), 256.0f);
    cr_assert_eq(ax_bf16_to_f32(acc[1]), 7.0f);
    cr_assert_eq(ax_bf16_to_f32(acc[2]), -8.0f);
    ax_reduce_local(AX_DT_BF16, AX_OP_MIN, acc, in, 3);
    cr_assert_eq(ax_bf16_to_f32(acc[2]), -8.0f);
    cr_assert_eq(ax_bf16_to_f32(acc[0]), 1.0f);

    uint64_t u[2] = {(1ull << 60) + 1, 5}, v[2] = {(1ull << 60) + 2, 7};
    ax_reduce_local(AX_DT_U64, AX_OP_SUM, u, v, 2);
    cr_assert(u[0] == (1ull << 61) + 3 && u[1] == 12, "u64 sums exactly");
    int32_t i[2] = {-5, 9}, j[2] = {3, -9};
    ax_reduce_local(AX_DT_I32, AX_OP_MAX, i, j, 2);
    cr_assert(i[0] == 3 && i[1] == 9);
    uint8_t c[2] = {200, 3}, d[2] = {100, 250};
    ax_reduce_local(AX_DT_U8, AX_OP_MIN, c, d, 2);
    cr_assert(c[0] == 100 && c[1] == 3);
    cr_assert_eq(ax_dtype_size(AX_DT_BF16), 2);
    cr_assert_eq(ax_dtype_size((ax_dtype)99), 0);
    cr_assert_str_eq(ax_dtype_name(AX_DT_U64), "u64");
    cr_assert_str_eq(ax_redop_name(AX_OP_MIN), "min");
}

Test(grid, typed_serial_and_world) {
    /* Criterion forks without MPI_Init: the world grid is serial */
    ax_grid_t *g = NULL;
    cr_assert_eq(ax_grid_create_world(&g), AX_OK);
    cr_assert_eq(ax_grid_size(g), 1);
    cr_assert_eq(ax_grid_uses_mpi(g), 0);
    int32_t a[4] = {1, 2, 3, 4}, b[4] = {0};
    for (int ax = 0; ax < AX_AXIS_COUNT; ax++) {
        ax_axis axis = (ax_axis)ax;
        for (int t = 0; t < AX_DT_COUNT; t++)
            for (int op = 0; op < AX_OP_COUNT; op++)
                cr_assert_eq(ax_coll_allreduce(g, axis, a, 1, (ax_dtype)t, (ax_redop)op), AX_OK);
        cr_assert_eq(ax_coll_alltoall(g, axis, a, 4, b, AX_DT_I32), AX_OK);
        cr_assert_arr_eq(a, b, sizeof a);
        int cnt = 3, zero = 0, one = 1;
        memset(b, 0, sizeof b);
        cr_assert_eq(ax_coll_alltoallv(g, axis, a, &cnt, &one, b, &cnt, &zero, AX_DT_I32), AX_OK);
        cr_assert(b[0] == 2 && b[1] == 3 && b[2] == 4 && b[3] == 0);
        cr_assert_eq(ax_coll_agree(g, axis, AX_ERR_IO, "x"), AX_ERR_IO);
        ax_error_clear();
        cr_assert_eq(ax_coll_send(g, axis, a, 1, AX_DT_I32, 0, 0), AX_ERR_ARG, "no peer");
        ax_error_clear();
        ax_req r;
        cr_assert_eq(ax_coll_iallreduce(g, axis, a, 4, AX_DT_I32, AX_OP_SUM, &r), AX_OK);
        cr_assert_eq(ax_req_progress(&r), AX_OK);
        cr_assert_eq(ax_test(&r), 1);
    }
    cr_assert(a[0] == 1 && a[3] == 4, "serial reductions leave the buffer alone");
    cr_assert_eq(ax_coll_allreduce(g, AX_AXIS_X, a, 1, (ax_dtype)42, AX_OP_SUM), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "ax_dtype"), "%s", ax_error_msg());
    ax_error_clear();
    ax_comm_stats s;
    ax_comm_stats_get(g, &s);
    cr_assert_eq(s.calls[AX_COMM_ALLTOALL][AX_AXIS_WORLD], 2);
    cr_assert_eq(ax_comm_stats_bytes_total(&s), 0.0, "a serial grid moves nothing");
    cr_assert_str_eq(ax_comm_kind_name(AX_COMM_ALLTOALL), "alltoall");
    cr_assert_str_eq(ax_comm_kind_name(AX_COMM_SEND), "send");
    cr_assert_eq(ax_comm_volume(AX_COMM_ALLTOALL, 4, 10, 8), 240.0);
    cr_assert_eq(ax_comm_volume(AX_COMM_SEND, 4, 10, 8), 80.0);
    ax_grid_free(g);
}

static void record_range(void *arg, long b, long e) {
    long *calls = arg;
    calls[0]++;
    calls[1] = b;
    calls[2] = e;
}

/* lib/dist/overlap.h on a serial grid: overlap is off (nothing to overlap with), so an issue is
 * the blocking collective and a compute runs in one piece; slots are checked. */
Test(grid, overlap_slots) {
    ax_grid_t *g = NULL;
    cr_assert_eq(ax_grid_create_serial(&g), AX_OK);
    ax_overlap *ov = NULL;
    cr_assert_eq(ax_overlap_create(g, 1, 3, &ov), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(ax_overlap_enabled(ov), 0);
    float a[4] = {1, 2, 3, 4}, b[4] = {0};
    cr_assert_eq(ax_overlap_allgather(ov, 1, AX_AXIS_Z, a, 4, b, AX_DT_F32), AX_OK);
    cr_assert_eq(b[3], 4.0f); /* complete at issue */
    cr_assert_eq(ax_overlap_in_flight(ov), 1);
    cr_assert_eq(ax_overlap_allreduce(ov, 1, AX_AXIS_X, a, 4, AX_DT_F32, AX_OP_SUM),
                 AX_ERR_INTERNAL); /* slot 1 was not waited for */
    cr_assert_eq(ax_overlap_allreduce(ov, 3, AX_AXIS_X, a, 4, AX_DT_F32, AX_OP_SUM),
                 AX_ERR_INTERNAL); /* no slot 3 */
    cr_assert_eq(ax_overlap_wait(ov, 1), AX_OK);
    cr_assert_eq(ax_overlap_in_flight(ov), 0);
    cr_assert_eq(ax_overlap_wait(ov, 2), AX_OK); /* never issued */
    long calls[3] = {0, -1, -1};
    ax_overlap_compute(ov, 5, 2, record_range, calls);
    cr_assert(calls[0] == 1 && calls[1] == 0 && calls[2] == 5, "%ld calls, last [%ld, %ld)",
              calls[0], calls[1], calls[2]);
    /* a failed issue leaves the slot free and nothing in flight */
    ax_comm_inject_failure(g, AX_COMM_REDUCE_SCATTER, AX_AXIS_Z, 0);
    cr_assert_eq(ax_overlap_reduce_scatter(ov, 0, AX_AXIS_Z, a, b, 4, AX_DT_F32, AX_OP_SUM),
                 AX_ERR_MPI);
    cr_assert_eq(ax_overlap_in_flight(ov), 0);
    cr_assert_eq(ax_overlap_reduce_scatter(ov, 0, AX_AXIS_Z, a, b, 4, AX_DT_F32, AX_OP_SUM), AX_OK);
    cr_assert_eq(ax_overlap_wait_all(ov), AX_OK);
    cr_assert_eq(ax_overlap_in_flight(ov), 0);
    ax_overlap_free(ov);
    ax_grid_free(g);
}

/* The per-axis overlap rule (lib/dist/overlap.h ax_overlap_decide): auto turns it off on an axis
 * inside one host, with placement unknown, or with more ranks x threads than cores; on across
 * hosts with cores to spare; off and forced are what they say; a 1-rank axis is always off. The
 * reason says which. */
static void decide_dev(int mode, int ranks, int hosts, int local, int threads, int cores, int dev,
                       int want, const char *why_has) {
    char why[160] = "";
    int on = ax_overlap_decide(mode, ranks, hosts, local, threads, cores, dev, why, sizeof why);
    cr_assert_eq(on, want, "mode %d ranks %d hosts %d local %d x %d threads, %d cores: %d (%s)",
                 mode, ranks, hosts, local, threads, cores, on, why);
    cr_assert(!strncmp(why, want ? "on: " : "off: ", want ? 4 : 5), "reason starts on/off: %s",
              why);
    cr_assert(strstr(why, why_has), "reason '%s' should say '%s'", why, why_has);
}
static void decide(int mode, int ranks, int hosts, int local, int threads, int cores, int want,
                   const char *why_has) {
    decide_dev(mode, ranks, hosts, local, threads, cores, 0, want, why_has);
}

Test(grid, overlap_decision_per_axis) {
    decide(AX_OVERLAP_AUTO, 2, 1, 2, 1, 2, 0, "share one host");
    decide(AX_OVERLAP_AUTO, 4, 0, 4, 1, 8, 0, "not known");
    decide(AX_OVERLAP_AUTO, 4, 2, 2, 4, 4, 0, "2 ranks x 4 threads on this host's 4 cores");
    decide(AX_OVERLAP_AUTO, 4, 2, 2, 2, 4, 1, "span 2 hosts");
    decide(AX_OVERLAP_FORCE, 2, 1, 2, 1, 2, 1, "forced");
    decide(AX_OVERLAP_FORCE, 8, 8, 64, 4, 2, 1, "forced");
    decide(AX_OVERLAP_OFF, 4, 2, 2, 1, 8, 0, "--no-overlap");
    for (int mode = 0; mode <= 2; mode++) decide(mode, 1, 1, 1, 1, 1, 0, "one rank");
    /* GPUs on one host over NCCL: the copy engines move the bytes, so auto overlaps */
    decide_dev(AX_OVERLAP_AUTO, 8, 1, 8, 16, 8, 1, 1, "NCCL");
    decide_dev(AX_OVERLAP_OFF, 8, 1, 8, 1, 8, 1, 0, "--no-overlap");
    cr_assert_eq(ax_overlap_decide(AX_OVERLAP_FORCE, 2, 1, 2, 1, 2, 0, NULL, 0), 1); /* no reason */
    /* a serial grid: placement is known (one host), every axis has one rank: off everywhere */
    ax_grid_t *g = NULL;
    cr_assert_eq(ax_grid_create_serial(&g), AX_OK);
    cr_assert_eq(ax_grid_axis_hosts(g, AX_AXIS_X), 1);
    cr_assert_eq(ax_grid_local_ranks(g), 1);
    ax_overlap *ov = NULL;
    cr_assert_eq(ax_overlap_create(g, AX_OVERLAP_FORCE, 1, &ov), AX_OK);
    for (int a = 0; a < AX_AXIS_COUNT; a++) {
        cr_assert_eq(ax_overlap_axis_on(ov, (ax_axis)a), 0);
        cr_assert(strstr(ax_overlap_axis_why(ov, (ax_axis)a), "one rank"));
    }
    ax_overlap_free(ov);
    ax_grid_free(g);
}
