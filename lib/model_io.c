#include "lib/model_io.h"

#include <stdlib.h>
#include <string.h>

static ax_status get_num(const ax_json *cfg, const char *key, const char *path, double *out) {
    const ax_json *v = ax_json_get(cfg, key);
    if (!v || (v->type != AX_JSON_NUM && v->type != AX_JSON_BOOL))
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: the manifest's config has no number \"%s\"; was it "
                         "written by axmem train?",
                         path, key);
    *out = v->num;
    return AX_OK;
}

ax_status ax_model_config_from_ckpt(const ax_ckpt_t *ck, ax_model_config *out) {
    const ax_json *cfg = ax_ckpt_config(ck);
    const char *path = ax_ckpt_path(ck);
    double layers = 0, dim = 0, heads = 0, ffn = 0, vocab = 0, tie = 0, theta = 0;
    AX_CHECK(get_num(cfg, "layers", path, &layers));
    AX_CHECK(get_num(cfg, "dim", path, &dim));
    AX_CHECK(get_num(cfg, "heads", path, &heads));
    AX_CHECK(get_num(cfg, "ffn", path, &ffn));
    AX_CHECK(get_num(cfg, "vocab", path, &vocab));
    AX_CHECK(get_num(cfg, "tie-embeddings", path, &tie));
    AX_CHECK(get_num(cfg, "rope-theta", path, &theta));
    *out = (ax_model_config){.n_layers = (int)layers,
                             .dim = (int)dim,
                             .n_heads = (int)heads,
                             .ffn = (int)ffn,
                             .vocab = (int)vocab,
                             .tie_embeddings = tie != 0,
                             .rope_theta = (float)theta,
                             .norm_eps = 1e-5f};
    ax_status st = ax_model_config_check(out);
    if (st != AX_OK) {
        ax_error_clear();
        return ax_errorf(AX_ERR_CORRUPT, "%s: the manifest's model shape is invalid", path);
    }
    return AX_OK;
}

ax_status ax_model_load_blob(ax_model_t *m, const ax_ckpt_t *ck, const char *blob, float *local) {
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
    float *global = malloc((size_t)n * sizeof(float));
    if (!global) return ax_errorf(AX_ERR_NOMEM, "out of memory reading checkpoint %s", path);
    ax_status st = ax_ckpt_read_blob(ck, blob, 0, n, global);
    for (int i = 0; st == AX_OK && i < n_t; i++)
        ax_model_scatter_tensor(m, i, global + ts[i].offset, local);
    free(global);
    ax_model_params_updated(m);
    return st;
}
