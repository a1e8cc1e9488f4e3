/* The global tensor table of a configuration: names, shapes, how each splits over the grid and
 * how it starts. One list for the model (model.c) and for converters (model_io.c), so a
 * checkpoint written from the table always loads. Order (docs/training.md "Architectures"):
 * wte, [wpe], per layer attn_norm, [attn_norm_bias], wqkv, [bqkv], wo, [bo], mlp_norm,
 * [mlp_norm_bias], w_up, [b_up], w_down, [b_down]; final_norm, [final_norm_bias], [lm_head]. */
#include "lib/model/model_internal.h"

#include <stdio.h>

typedef struct {
    void (*emit)(void *u, const tensor_spec *s);
    void *u;
    int n;
} spec_list;

/* g: the global sizes of the row groups (NULL: `groups` equal groups of rows, or of cols for a
 * vector) */
static void add_g(spec_list *s, int layer, int slot, tp_kind kind, int groups, const int64_t *g,
                  int64_t rows, int64_t cols, tp_init init, const char *name) {
    if (s->emit) {
        tensor_spec t = {.kind = kind,
                         .groups = groups,
                         .rows = rows,
                         .cols = cols,
                         .init = init,
                         .layer = layer,
                         .slot = slot};
        int64_t n = kind == TP_YVEC ? cols : rows;
        for (int i = 0; i < groups && i < 3; i++) t.group_g[i] = g ? g[i] : n / groups;
        if (layer >= 0)
            snprintf(t.name, sizeof t.name, "layers.%d.%s", layer, name);
        else
            snprintf(t.name, sizeof t.name, "%s", name);
        s->emit(s->u, &t);
    }
    s->n++;
}

static void add(spec_list *s, int layer, int slot, tp_kind kind, int groups, int64_t rows,
                int64_t cols, tp_init init, const char *name) {
    add_g(s, layer, slot, kind, groups, NULL, rows, cols, init, name);
}

int64_t model_spec_block(const tensor_spec *s, const int dims[4]) {
    int64_t gx = dims[AX_AXIS_X], gy = dims[AX_AXIS_Y];
    switch (s->kind) {
    case TP_NORMAL:
        return s->rows / gy * (s->cols / gx);
    case TP_TRANSPOSED:
        return s->rows / gx * (s->cols / gy);
    case TP_VEC:
        return s->cols / gx;
    case TP_VOCAB:
        return (s->rows + gy - 1) / gy * (s->cols / gx);
    case TP_YVEC:
        return s->cols / gy;
    case TP_ROWS:
        return s->rows * (s->cols / gx);
    }
    return 0;
}

int model_tensor_specs(const ax_model_config *c, void (*emit)(void *u, const tensor_spec *s),
                       void *u) {
    spec_list s = {emit, u, 0};
    int64_t C = c->dim, F = c->ffn, V = c->vocab, U = model_up_rows(c);
    /* [q | k | v]: H query heads, then Hkv key and Hkv value heads of D = C / H */
    int64_t Ckv = (int64_t)model_kv_heads(c) * (C / c->n_heads), qkv[3] = {C, Ckv, Ckv};
    int ln = c->norm == AX_NORM_LAYER, b = c->bias != 0,
        up_groups = c->mlp == AX_MLP_SWIGLU ? 2 : 1;
    add(&s, -1, G_WTE, TP_VOCAB, 1, V, C, INIT_NORMAL, "wte");
    if (c->pos == AX_POS_LEARNED) add(&s, -1, G_WPE, TP_ROWS, 1, c->max_pos, C, INIT_NORMAL, "wpe");
    for (int l = 0; l < c->n_layers; l++) {
        add(&s, l, L_NORM1, TP_VEC, 1, 1, C, INIT_ONE, "attn_norm");
        if (ln) add(&s, l, L_NORM1B, TP_VEC, 1, 1, C, INIT_ZERO, "attn_norm_bias");
        add_g(&s, l, L_WQKV, TP_NORMAL, 3, qkv, C + 2 * Ckv, C, INIT_NORMAL, "wqkv");
        if (b) add_g(&s, l, L_BQKV, TP_YVEC, 3, qkv, 1, C + 2 * Ckv, INIT_ZERO, "bqkv");
        add(&s, l, L_WO, TP_TRANSPOSED, 1, C, C, INIT_PROJ, "wo");
        if (b) add(&s, l, L_BO, TP_VEC, 1, 1, C, INIT_ZERO, "bo");
        add(&s, l, L_NORM2, TP_VEC, 1, 1, C, INIT_ONE, "mlp_norm");
        if (ln) add(&s, l, L_NORM2B, TP_VEC, 1, 1, C, INIT_ZERO, "mlp_norm_bias");
        add(&s, l, L_WUP, TP_NORMAL, up_groups, U, C, INIT_NORMAL, "w_up");
        if (b) add(&s, l, L_BUP, TP_YVEC, up_groups, 1, U, INIT_ZERO, "b_up");
        add(&s, l, L_WDOWN, TP_TRANSPOSED, 1, C, F, INIT_PROJ, "w_down");
        if (b) add(&s, l, L_BDOWN, TP_VEC, 1, 1, C, INIT_ZERO, "b_down");
    }
    add(&s, -1, G_NORMF, TP_VEC, 1, 1, C, INIT_ONE, "final_norm");
    if (ln) add(&s, -1, G_NORMFB, TP_VEC, 1, 1, C, INIT_ZERO, "final_norm_bias");
    if (!c->tie_embeddings) add(&s, -1, G_HEAD, TP_VOCAB, 1, V, C, INIT_NORMAL, "lm_head");
    return s.n;
}
