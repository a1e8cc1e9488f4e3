/* The tensors of a model directory: model.safetensors, or the shards that
 * model.safetensors.index.json maps each tensor to (each shard opened once). */
#include "interop/hf_model.h"
#include "lib/core/fsutil.h"
#include "lib/core/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SHARDS 4096

struct ax_hf_weights {
    char dir[4096];
    ax_st_file **files;
    int n_files;
};

void ax_hf_weights_close(ax_hf_weights *w) {
    if (!w) return;
    for (int i = 0; i < w->n_files; i++) ax_st_close(w->files[i]);
    free(w->files);
    free(w);
}

static ax_status add_file(ax_hf_weights *w, const char *name) {
    if (strchr(name, '/') || !strcmp(name, "..") || !name[0])
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s/model.safetensors.index.json names shard \"%.64s\"; shards must be "
                         "plain file names in the model directory",
                         w->dir, name);
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", w->dir, name);
    for (int i = 0; i < w->n_files; i++)
        if (!strcmp(ax_st_path(w->files[i]), path)) return AX_OK;
    if (w->n_files == MAX_SHARDS)
        return ax_errorf(AX_ERR_CORRUPT, "%s: more than %d shards", w->dir, MAX_SHARDS);
    AX_CHECK(ax_st_open(path, &w->files[w->n_files]));
    w->n_files++;
    return AX_OK;
}

static ax_status open_index(ax_hf_weights *w, const char *path) {
    ax_json *j = NULL;
    AX_CHECK(ax_hf_read_json(path, 64u << 20, &j));
    ax_status st = AX_OK;
    const ax_json *map = ax_json_get(j, "weight_map");
    if (!map || map->type != AX_JSON_OBJ)
        st = ax_errorf(AX_ERR_CORRUPT, "%s has no object \"weight_map\"", path);
    for (size_t i = 0; st == AX_OK && i < map->n; i++) {
        if (map->items[i]->type != AX_JSON_STR) {
            st = ax_errorf(AX_ERR_CORRUPT, "%s: weight_map[\"%s\"] is not a file name", path,
                           map->keys[i]);
            break;
        }
        st = add_file(w, map->items[i]->str);
    }
    /* every mapped tensor must be in the shard the map names */
    for (size_t i = 0; st == AX_OK && i < map->n; i++) {
        char sp[8192];
        snprintf(sp, sizeof sp, "%s/%s", w->dir, map->items[i]->str);
        for (int f = 0; f < w->n_files; f++)
            if (!strcmp(ax_st_path(w->files[f]), sp) && !ax_st_find(w->files[f], map->keys[i]))
                st =
                    ax_errorf(AX_ERR_CORRUPT, "%s maps tensor \"%s\" to %s, which does not hold it",
                              path, map->keys[i], sp);
    }
    ax_json_free(j);
    return st;
}

ax_status ax_hf_weights_open(const char *dir, ax_hf_weights **out) {
    *out = NULL;
    ax_hf_weights *w = calloc(1, sizeof *w);
    if (!w || !(w->files = calloc(MAX_SHARDS, sizeof *w->files))) {
        free(w);
        return ax_errorf(AX_ERR_NOMEM, "out of memory opening %s", dir);
    }
    snprintf(w->dir, sizeof w->dir, "%s", dir);
    char single[4200], index[4200];
    snprintf(single, sizeof single, "%s/model.safetensors", dir);
    snprintf(index, sizeof index, "%s/model.safetensors.index.json", dir);
    ax_status st;
    if (ax_path_exists(single))
        st = add_file(w, "model.safetensors");
    else if (ax_path_exists(index))
        st = open_index(w, index);
    else
        st = ax_errorf(AX_ERR_IO,
                       "%s holds neither model.safetensors nor model.safetensors.index.json; "
                       "save the model with safe_serialization (the default) or convert its "
                       "pytorch_model.bin",
                       dir);
    if (st != AX_OK) {
        ax_hf_weights_close(w);
        return st;
    }
    /* a tensor in two shards is ambiguous */
    for (int a = 0; a < w->n_files; a++)
        for (int i = 0; i < ax_st_n_tensors(w->files[a]); i++)
            for (int b = a + 1; b < w->n_files; b++)
                if (ax_st_find(w->files[b], ax_st_tensor_at(w->files[a], i)->name)) {
                    st = ax_errorf(AX_ERR_CORRUPT, "tensor \"%s\" is in both %s and %s",
                                   ax_st_tensor_at(w->files[a], i)->name, ax_st_path(w->files[a]),
                                   ax_st_path(w->files[b]));
                    ax_hf_weights_close(w);
                    return st;
                }
    *out = w;
    return AX_OK;
}

ax_status ax_hf_weights_find(const ax_hf_weights *w, const char *name, const ax_st_file **file,
                             const ax_st_tensor **t) {
    for (int f = 0; f < w->n_files; f++) {
        const ax_st_tensor *x = ax_st_find(w->files[f], name);
        if (x) {
            *file = w->files[f], *t = x;
            return AX_OK;
        }
    }
    return ax_errorf(AX_ERR_CORRUPT,
                     "%s: the model has no tensor \"%s\"; is it a checkpoint of the "
                     "architecture config.json names, saved by transformers?",
                     w->dir, name);
}

int ax_hf_weights_count(const ax_hf_weights *w) {
    int n = 0;
    for (int f = 0; f < w->n_files; f++) n += ax_st_n_tensors(w->files[f]);
    return n;
}

const char *ax_hf_weights_name(const ax_hf_weights *w, int i, const ax_st_file **file) {
    for (int f = 0; f < w->n_files; f++) {
        if (i < ax_st_n_tensors(w->files[f])) {
            *file = w->files[f];
            return ax_st_tensor_at(w->files[f], i)->name;
        }
        i -= ax_st_n_tensors(w->files[f]);
    }
    return NULL;
}
