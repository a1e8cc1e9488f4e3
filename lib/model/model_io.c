#include "lib/model/model_io.h"
#include "lib/backend/backend.h"
#include "lib/model/model_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One integer of the manifest's config, converted only when it is integral and within
 * [lo, hi] (a double outside int's range must never be cast: 1e30 would be undefined). The
 * bounds are the ones `axmem train` accepts for the same flags. */
static ax_status get_int(const ax_json *cfg, const char *key, const char *path, int64_t lo,
                         int64_t hi, int *out) {
    const ax_json *v = ax_json_get(cfg, key);
    int64_t x;
    if (!v || v->type != AX_JSON_NUM)
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: the manifest's config has no number \"%s\"; was it "
                         "written by axmem train?",
                         path, key);
    if (!ax_json_int_in(v, lo, hi, &x))
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: the manifest's config has \"%s\" = %g, not an integer in [%lld, "
                         "%lld]; the checkpoint is damaged",
                         path, key, v->num, (long long)lo, (long long)hi);
    *out = (int)x;
    return AX_OK;
}

/* An optional word of the config ("norm": "rms" | "layer"): *out = its index in words, or dflt
 * when absent. */
static ax_status get_word(const ax_json *cfg, const char *key, const char *path,
                          const char *const *words, int n, int dflt, int *out) {
    const ax_json *v = ax_json_get(cfg, key);
    *out = dflt;
    if (!v) return AX_OK;
    if (v->type == AX_JSON_STR)
        for (int i = 0; i < n; i++)
            if (!strcmp(v->str, words[i])) {
                *out = i;
                return AX_OK;
            }
    char list[128] = "";
    for (int i = 0; i < n; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s\"%s\"", i ? ", " : "",
                 words[i]);
    return ax_errorf(AX_ERR_CORRUPT,
                     "%s: the manifest's config has a \"%s\" that is not one of %s; the "
                     "checkpoint is damaged or from a newer axmem",
                     path, key, list);
}

/* An optional boolean (true/false or a number): dflt when absent. */
static ax_status get_bool(const ax_json *cfg, const char *key, const char *path, int *out) {
    const ax_json *v = ax_json_get(cfg, key);
    *out = 0;
    if (!v) return AX_OK;
    if (v->type != AX_JSON_BOOL && v->type != AX_JSON_NUM)
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: the manifest's config has a \"%s\" that is not a boolean; the "
                         "checkpoint is damaged",
                         path, key);
    *out = v->num != 0;
    return AX_OK;
}

/* The architecture keys (docs/training.md "Architectures"); absent = Llama's. */
static ax_status arch_from_config(const ax_json *cfg, const char *path, ax_model_config *c) {
    static const char *const norms[] = {"rms", "layer"},
                             *const mlps[] = {"swiglu", "gelu", "gelu-tanh"},
                             *const poss[] = {"rope", "learned"};
    int norm, mlp, pos;
    AX_CHECK(get_word(cfg, "norm", path, norms, 2, AX_NORM_RMS, &norm));
    AX_CHECK(get_word(cfg, "mlp", path, mlps, 3, AX_MLP_SWIGLU, &mlp));
    AX_CHECK(get_word(cfg, "pos", path, poss, 2, AX_POS_ROPE, &pos));
    AX_CHECK(get_bool(cfg, "bias", path, &c->bias));
    AX_CHECK(get_bool(cfg, "parallel-residual", path, &c->parallel_residual));
    c->norm = (ax_norm_kind)norm, c->mlp = (ax_mlp_kind)mlp, c->pos = (ax_pos_kind)pos;
    c->rotary_dim = c->max_pos = 0;
    if (ax_json_get(cfg, "rotary-dim"))
        AX_CHECK(get_int(cfg, "rotary-dim", path, 0, 65536, &c->rotary_dim));
    if (ax_json_get(cfg, "max-pos"))
        AX_CHECK(get_int(cfg, "max-pos", path, 0, 1 << 20, &c->max_pos));
    c->n_kv_heads = 0; /* grouped-query attention; absent = one K/V head per head */
    if (ax_json_get(cfg, "kv-heads"))
        AX_CHECK(get_int(cfg, "kv-heads", path, 0, 1024, &c->n_kv_heads));
    return AX_OK;
}

ax_status ax_model_config_from_ckpt(const ax_ckpt_t *ck, ax_model_config *out) {
    const ax_json *cfg = ax_ckpt_config(ck);
    const char *path = ax_ckpt_path(ck);
    int layers = 0, dim = 0, heads = 0, ffn = 0, vocab = 0;
    AX_CHECK(get_int(cfg, "layers", path, 1, 1024, &layers));
    AX_CHECK(get_int(cfg, "dim", path, 2, 65536, &dim));
    AX_CHECK(get_int(cfg, "heads", path, 1, 1024, &heads));
    AX_CHECK(get_int(cfg, "ffn", path, 1, 262144, &ffn));
    AX_CHECK(get_int(cfg, "vocab", path, 257, 1 << 24, &vocab));
    const ax_json *tie = ax_json_get(cfg, "tie-embeddings"),
                  *theta = ax_json_get(cfg, "rope-theta"), *eps = ax_json_get(cfg, "norm-eps");
    if (!tie || (tie->type != AX_JSON_BOOL && tie->type != AX_JSON_NUM))
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: the manifest's config has no boolean \"tie-embeddings\"; was it "
                         "written by axmem train?",
                         path);
    /* a float cast of a double beyond float's range is undefined: bound it first */
    if (!theta || theta->type != AX_JSON_NUM || !(theta->num > 1.0 && theta->num <= 1e12))
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: the manifest's config has no \"rope-theta\" in (1, 1e12]; the "
                         "checkpoint is damaged",
                         path);
    /* absent in manifests written before it was stored: those runs used the default */
    if (eps && (eps->type != AX_JSON_NUM || !(eps->num >= 1e-12 && eps->num <= 1)))
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: the manifest's config has a \"norm-eps\" outside [1e-12, 1]; the "
                         "checkpoint is damaged",
                         path);
    *out = (ax_model_config){.n_layers = layers,
                             .dim = dim,
                             .n_heads = heads,
                             .ffn = ffn,
                             .vocab = vocab,
                             .tie_embeddings = tie->num != 0,
                             .rope_theta = (float)theta->num,
                             .norm_eps = (float)(eps ? eps->num : AX_NORM_EPS_DEFAULT)};
    AX_CHECK(arch_from_config(cfg, path, out));
    ax_status st = ax_model_config_check(out);
    if (st != AX_OK) {
        char why[256];
        snprintf(why, sizeof why, "%s", ax_error_msg());
        ax_error_clear();
        return ax_errorf(AX_ERR_CORRUPT, "%s: the manifest's model shape is invalid (%s)", path,
                         why);
    }
    return AX_OK;
}

ax_status ax_model_load_blob(ax_model_t *m, const ax_ckpt_t *ck, const char *blob, ax_slab *local) {
    const char *path = ax_ckpt_path(ck);
    int n_t = ax_model_n_tensors(m);
    const ax_tensor_info *ts = ax_model_tensors(m);
    if (ax_ckpt_n_tensors(ck) != n_t)
        return ax_errorf(AX_ERR_MISMATCH, "checkpoint %s holds %d tensors, the model %d", path,
                         ax_ckpt_n_tensors(ck), n_t);
    for (int i = 0; i < n_t; i++) {
        const ax_tensor_info *c = ax_ckpt_tensor(ck, i);
        if (strcmp(c->name, ts[i].name) || c->numel != ts[i].numel || c->offset != ts[i].offset)
            return ax_errorf(AX_ERR_MISMATCH,
                             "checkpoint %s: tensor %d is %s (%lld values), the "
                             "model expects %s (%lld)",
                             path, i, c->name, (long long)c->numel, ts[i].name,
                             (long long)ts[i].numel);
    }
    int64_t n = ax_model_n_params(m);
    if (n <= 0 || (uint64_t)n > SIZE_MAX / sizeof(float))
        return ax_errorf(AX_ERR_MISMATCH,
                         "checkpoint %s: a model of %lld parameters does not fit "
                         "in memory here",
                         path, (long long)n);
    /* host staging for the file's global layout; scattered into the slabs tensor by tensor */
    float *global = ax_host_alloc(ax_model_ctx(m), (size_t)n * sizeof(float));
    if (!global) return ax_errorf(AX_ERR_NOMEM, "out of memory reading checkpoint %s", path);
    ax_status st = ax_ckpt_read_blob(ck, blob, 0, n, global);
    for (int i = 0; st == AX_OK && i < n_t; i++)
        ax_model_scatter_tensor(m, i, global + ts[i].offset, local);
    if (st == AX_OK) st = ax_model_status(m); /* a shard that could not be written */
    ax_host_free(ax_model_ctx(m), global);    /* scatter marked the gathered blocks stale */
    return st;
}

int ax_model_config_n_tensors(const ax_model_config *c) {
    return model_tensor_specs(c, NULL, NULL);
}

typedef struct {
    ax_tensor_info *out;
    int i;
    int64_t off;
} table_fill;

/* vectors are [cols, 1] and matrices [rows, cols], laid end to end (model.c's add_tensor) */
static void put(void *u, const tensor_spec *s) {
    table_fill *f = u;
    int vec = s->kind == TP_VEC || s->kind == TP_YVEC;
    ax_tensor_info *t = &f->out[f->i++];
    *t = (ax_tensor_info){.ndim = vec ? 1 : 2,
                          .shape = {vec ? s->cols : s->rows, vec ? 1 : s->cols},
                          .offset = f->off,
                          .numel = s->rows * s->cols};
    snprintf(t->name, sizeof t->name, "%s", s->name);
    f->off += t->numel;
}

void ax_model_tensor_table(const ax_model_config *c, ax_tensor_info *out) {
    table_fill f = {out, 0, 0};
    model_tensor_specs(c, put, &f);
}

typedef struct {
    const int *dims;
    void (*emit)(void *u, int layer, int64_t block);
    void *u;
} blocks_fn;

static void block_of(void *u, const tensor_spec *s) {
    blocks_fn *b = u;
    b->emit(b->u, s->layer, model_spec_block(s, b->dims));
}

void ax_model_rank_blocks(const ax_model_config *c, const int dims[4],
                          void (*emit)(void *u, int layer, int64_t block), void *u) {
    blocks_fn b = {dims, emit, u};
    model_tensor_specs(c, block_of, &b);
}

/* an integer key of obj in [1, 2^30], else 0 */
static int positive_key(const ax_json *obj, const char *key) {
    int64_t x;
    const ax_json *v = ax_json_get(obj, key);
    return v && ax_json_int_in(v, 1, 1 << 30, &x) ? (int)x : 0;
}

int ax_model_position_limit(const ax_ckpt_t *ck) {
    int imported = positive_key(ax_ckpt_config(ck), "max-positions"),
        init = positive_key(ax_ckpt_state(ck), "init_max_positions"),
        seq = positive_key(ax_ckpt_config(ck), "seq-len");
    if (imported) return imported;
    if (init || seq) return init > seq ? init : seq;
    return 2048; /* LlamaConfig's default */
}
