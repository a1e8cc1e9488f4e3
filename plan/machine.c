/* Machine profiles: built in (with where each number comes from) or read from JSON. */
#include "plan/plan_run.h"

#include "lib/core/fsutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *name, *source;
    double gemm_tflops, half, peak_tflops, mem_gib;
    int per_node;
    double node_bw, node_lat_us, net_bw, net_lat_us;
    int elem;
    double overlap;
    /* the GPU profiles below: NCCL (RCCL on Frontier), so auto overlaps every axis, as the
     * runtime decides for device memory; cores not known (0), one thread a device */
    int transport, cores, threads;
    double mem_tbs; /* memory-bound passes, TB/s (0: not priced) */
} builtin;

/* Sustained GEMM rates are 0.75 of the dense bf16 peak for the NVIDIA parts (large cuBLAS
 * bf16 GEMMs reach 0.7-0.8 of it) and 0.55 for the MI250X; the small-GEMM half-rate dimension
 * (256) is an assumption (tensor-core GEMMs lose about half their rate when a side drops to a
 * few hundred). Bandwidths are per GPU, one direction, as a ring collective sees them: within
 * a node a collective drives every NVLink of the GPU (NCCL builds rings over all of them), so
 * the node figure is 0.8 of the GPU's total NVLink bandwidth; across nodes the NIC share.
 * Measured on a lent H200 (2026-11-30, bench/results/device_check-2026-11-30-nvidia-h200.txt):
 * cuBLAS bf16 8192^3 through PyTorch 787-798 TFLOP/s (0.80 of peak); axmem's own bf16 GEMMs in
 * the ~1B model about 620 (0.63, operands staged per GEMM), so 0.75 sits between the two.
 * Memory-bound passes (AdamW, the elementwise ops) run at 0.8 of the datasheet's HBM bandwidth
 * (streaming kernels reach 0.8-0.9 of it; an assumption, not measured here): A100 80GB 2.04
 * TB/s, A100 40GB 1.56, H100 SXM 3.35, H200 4.8, H100 96GB (GH200) 4.0, MI250X 3.2 a card
 * (1.6 a GCD). */
static const builtin builtins[] = {
    {"a100",
     "NVIDIA A100 SXM4 80GB datasheet: 312 TFLOP/s dense bf16, 80 GB HBM2e, NVLink 3 "
     "600 GB/s bidirectional (300 one way, 240 taken); DGX A100: 8 GPUs, 8 x 200 Gb/s HDR "
     "InfiniBand (25 GB/s per GPU); latencies typical of NCCL (5 us NVLink, 10 us IB)",
     234, 256, 312, 80, 8, 240, 5, 25, 10, 2, 1.0, AX_TRANSPORT_NCCL, 0, 1, 1.63},
    {"h100",
     "NVIDIA H100 SXM5 80GB datasheet: 989 TFLOP/s dense bf16, 80 GB HBM3, NVLink 4 900 "
     "GB/s bidirectional (450 one way, 360 taken); DGX H100: 8 GPUs, 8 x 400 Gb/s NDR InfiniBand "
     "(50 GB/s per GPU); latencies as a100",
     742, 256, 989, 80, 8, 360, 5, 50, 10, 2, 1.0, AX_TRANSPORT_NCCL, 0, 1, 2.68},
    {"h200",
     "NVIDIA H200 SXM 141GB datasheet: 989 TFLOP/s dense bf16 (as H100), 141 GB HBM3e, "
     "NVLink 4 900 GB/s bidirectional (360 taken); DGX H200: 8 x 400 Gb/s NDR InfiniBand (50 GB/s "
     "per GPU); latencies as a100",
     742, 256, 989, 141, 8, 360, 5, 50, 10, 2, 1.0, AX_TRANSPORT_NCCL, 0, 1, 3.84},
    {"perlmutter",
     "Perlmutter GPU node (NERSC docs; AxoNN, Singh et al. SC'24): 4 x A100 SXM4 "
     "40GB (312 TFLOP/s dense bf16), NVLink 3 (12 links, 4 to each peer: 300 GB/s "
     "one way, 240 taken), 4 x Slingshot-11 NICs at 25 GB/s (25 GB/s per GPU)",
     234, 256, 312, 40, 4, 240, 5, 25, 10, 2, 1.0, AX_TRANSPORT_NCCL, 0, 1, 1.25},
    {"frontier",
     "Frontier node (OLCF user guide; AxoNN, Singh et al. SC'24): 4 x MI250X = 8 GCDs, "
     "191.5 TFLOP/s dense bf16 and 64 GB HBM2e per GCD, Infinity Fabric 50-200 GB/s "
     "between GCDs (100 GB/s taken, one way), 4 x Slingshot-11 NICs at 25 GB/s "
     "(12.5 GB/s per GCD); sustained GEMM 0.55 of peak (assumed)",
     105, 256, 191.5, 64, 8, 100, 8, 12.5, 12, 2, 1.0, AX_TRANSPORT_NCCL, 0, 1, 1.28},
    {"alps",
     "Alps GH200 node (CSCS; Gordon Bell 2024 AxoNN paper): 4 x H100 96GB (989 TFLOP/s "
     "dense bf16), NVLink 4 (150 GB/s one way to each of 3 peers, 360 taken), 4 x Slingshot-11 "
     "NICs "
     "at 25 GB/s (25 GB/s per GPU)",
     742, 256, 989, 96, 4, 360, 5, 25, 10, 2, 1.0, AX_TRANSPORT_NCCL, 0, 1, 3.2},
};
static const int n_builtins = (int)(sizeof builtins / sizeof builtins[0]);

const char *const *ax_plan_machine_names(void) {
    static const char *names[sizeof builtins / sizeof builtins[0] + 1];
    for (int i = 0; i < n_builtins; i++) names[i] = builtins[i].name;
    return names;
}

static void from_builtin(const builtin *b, ax_plan_machine *out) {
    *out = (ax_plan_machine){0};
    ax_machine *m = &out->m;
    snprintf(m->name, sizeof m->name, "%s", b->name);
    snprintf(out->source, sizeof out->source, "%s", b->source);
    m->gemm_flops = b->gemm_tflops * 1e12, m->gemm_half_dim = b->half;
    m->peak_flops = b->peak_tflops * 1e12, m->mem_bytes = b->mem_gib * 1073741824.0;
    m->devices_per_node = b->per_node;
    m->bw[AX_LEVEL_NODE] = b->node_bw * 1e9, m->lat[AX_LEVEL_NODE] = b->node_lat_us * 1e-6;
    m->bw[AX_LEVEL_NET] = b->net_bw * 1e9, m->lat[AX_LEVEL_NET] = b->net_lat_us * 1e-6;
    m->elem_bytes = b->elem, m->overlap = b->overlap;
    m->transport = b->transport, m->cores_per_node = b->cores;
    m->threads_per_device = b->threads > 0 ? b->threads : 1;
    m->mem_bw = b->mem_tbs * 1e12;
}

static ax_status num(const ax_json *o, const char *key, const char *what, double lo, double hi,
                     double *out) {
    AX_CHECK(ax_json_get_num(o, key, what, out));
    if (!(*out >= lo && *out <= hi))
        return ax_errorf(AX_ERR_CORRUPT, "%s: \"%s\" is %g, outside [%g, %g]; fix the profile",
                         what, key, *out, lo, hi);
    return AX_OK;
}

ax_status ax_plan_machine_from_json(const ax_json *o, const char *what, ax_plan_machine *out) {
    *out = (ax_plan_machine){0};
    ax_machine *m = &out->m;
    const char *s = NULL;
    double v[11];
    if (!o || o->type != AX_JSON_OBJ)
        return ax_errorf(AX_ERR_CORRUPT, "%s: a machine profile is a JSON object", what);
    AX_CHECK(ax_json_get_str(o, "name", what, &s));
    snprintf(m->name, sizeof m->name, "%s", s);
    if (ax_json_get(o, "source") && ax_json_get_str(o, "source", what, &s) == AX_OK)
        snprintf(out->source, sizeof out->source, "%s", s);
    AX_CHECK(num(o, "gemm_tflops", what, 1e-6, 1e6, &v[0]));
    AX_CHECK(num(o, "gemm_half_dim", what, 0, 1e6, &v[1]));
    AX_CHECK(num(o, "peak_tflops", what, 0, 1e6, &v[2]));
    AX_CHECK(num(o, "mem_gib", what, 1e-3, 1e6, &v[3]));
    AX_CHECK(num(o, "devices_per_node", what, 1, 1e6, &v[4]));
    AX_CHECK(num(o, "node_bw_gbs", what, 1e-6, 1e6, &v[5]));
    AX_CHECK(num(o, "node_lat_us", what, 0, 1e6, &v[6]));
    AX_CHECK(num(o, "net_bw_gbs", what, 1e-6, 1e6, &v[7]));
    AX_CHECK(num(o, "net_lat_us", what, 0, 1e6, &v[8]));
    AX_CHECK(num(o, "elem_bytes", what, 1, 8, &v[9]));
    AX_CHECK(num(o, "overlap", what, 0, 1, &v[10]));
    /* optional: the transport ("nccl" by default), cores (0: not known), threads a device (1) */
    double cores = 0, threads = 1;
    int transport = AX_TRANSPORT_NCCL;
    if (ax_json_get(o, "transport")) {
        AX_CHECK(ax_json_get_str(o, "transport", what, &s));
        if (!strcmp(s, "host"))
            transport = AX_TRANSPORT_HOST;
        else if (strcmp(s, "nccl"))
            return ax_errorf(AX_ERR_CORRUPT,
                             "%s: \"transport\" is \"%s\"; use \"host\" (MPI: shared memory "
                             "inside a node) or \"nccl\" (GPU collectives); fix the profile",
                             what, s);
    }
    if (ax_json_get(o, "cores_per_node")) AX_CHECK(num(o, "cores_per_node", what, 0, 1e6, &cores));
    if (ax_json_get(o, "threads_per_device"))
        AX_CHECK(num(o, "threads_per_device", what, 1, 1e6, &threads));
    /* optional too: 0 leaves the memory-bound passes unpriced */
    double mem_bw = 0;
    if (ax_json_get(o, "mem_bw_gbs")) AX_CHECK(num(o, "mem_bw_gbs", what, 0, 1e6, &mem_bw));
    builtin b = {m->name,   out->source, v[0],       v[1],         v[2],        v[3],
                 (int)v[4], v[5],        v[6],       v[7],         v[8],        (int)v[9],
                 v[10],     transport,   (int)cores, (int)threads, mem_bw / 1e3};
    char name[64], source[512];
    snprintf(name, sizeof name, "%s", m->name);
    snprintf(source, sizeof source, "%s", out->source);
    b.name = name, b.source = source;
    from_builtin(&b, out);
    return AX_OK;
}

ax_status ax_plan_machine_load(const char *name_or_path, ax_plan_machine *out) {
    for (int i = 0; i < n_builtins; i++)
        if (!strcmp(name_or_path, builtins[i].name)) {
            from_builtin(&builtins[i], out);
            return AX_OK;
        }
    if (!ax_path_exists(name_or_path)) {
        char list[256] = "";
        for (int i = 0; i < n_builtins; i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
                     builtins[i].name);
        return ax_errorf(AX_ERR_ARG,
                         "--machine %s: no such profile or file; use one of %s, or a JSON file "
                         "(axmem plan --measure --out FILE.json writes one for this machine)",
                         name_or_path, list);
    }
    char *text = NULL;
    size_t len = 0;
    AX_CHECK(ax_read_file(name_or_path, &text, &len));
    ax_json *j = NULL;
    ax_status st = ax_json_parse(text, len, name_or_path, &j);
    free(text);
    if (st == AX_OK) st = ax_plan_machine_from_json(j, name_or_path, out);
    ax_json_free(j);
    return st;
}

void ax_plan_machine_json(const ax_plan_machine *pm, ax_jw *w) {
    const ax_machine *m = &pm->m;
    ax_jw_obj_begin(w);
    ax_jw_key(w, "name"), ax_jw_str(w, m->name);
    ax_jw_key(w, "source"), ax_jw_str(w, pm->source);
    ax_jw_key(w, "gemm_tflops"), ax_jw_num(w, m->gemm_flops / 1e12);
    ax_jw_key(w, "gemm_half_dim"), ax_jw_num(w, m->gemm_half_dim);
    ax_jw_key(w, "peak_tflops"), ax_jw_num(w, m->peak_flops / 1e12);
    ax_jw_key(w, "mem_gib"), ax_jw_num(w, m->mem_bytes / 1073741824.0);
    ax_jw_key(w, "devices_per_node"), ax_jw_int(w, m->devices_per_node);
    ax_jw_key(w, "node_bw_gbs"), ax_jw_num(w, m->bw[AX_LEVEL_NODE] / 1e9);
    ax_jw_key(w, "node_lat_us"), ax_jw_num(w, m->lat[AX_LEVEL_NODE] * 1e6);
    ax_jw_key(w, "net_bw_gbs"), ax_jw_num(w, m->bw[AX_LEVEL_NET] / 1e9);
    ax_jw_key(w, "net_lat_us"), ax_jw_num(w, m->lat[AX_LEVEL_NET] * 1e6);
    ax_jw_key(w, "elem_bytes"), ax_jw_int(w, m->elem_bytes);
    ax_jw_key(w, "overlap"), ax_jw_num(w, m->overlap);
    ax_jw_key(w, "transport"), ax_jw_str(w, m->transport == AX_TRANSPORT_HOST ? "host" : "nccl");
    ax_jw_key(w, "cores_per_node"), ax_jw_int(w, m->cores_per_node);
    ax_jw_key(w, "threads_per_device"), ax_jw_int(w, m->threads_per_device);
    ax_jw_key(w, "mem_bw_gbs"), ax_jw_num(w, m->mem_bw / 1e9);
    ax_jw_obj_end(w);
}
