/* memscan index handle: options, accessors, counting windows into the table, statistics. */
#include "index/index_impl.h"
#include "index/hash.h"

#include "lib/core/json.h"

#include <stddef.h>
#include <stdio.h>

#include <stdlib.h>
#include <string.h>

const char *const ax_memscan_hist_labels[AX_MEMSCAN_HIST] = {"1", "2-3", "4-15", "16-63", "64+"};

int ax_memscan_hist_bucket(uint64_t count) {
    return count <= 1 ? 0 : count <= 3 ? 1 : count <= 15 ? 2 : count <= 63 ? 3 : 4;
}

void ax_memscan_build_opts_default(ax_memscan_build_opts *o) {
    memset(o, 0, sizeof *o);
    o->n = AX_MEMSCAN_N_DEFAULT;
    o->round_windows = 1u << 20;
    o->hash_bits = 64;
}

static ax_memscan_open_counts g_open_counts;

void ax_ms_count_open(size_t field_offset) {
    __atomic_fetch_add((uint64_t *)((char *)&g_open_counts + field_offset), 1, __ATOMIC_RELAXED);
}

void ax_memscan_open_counts_get(ax_memscan_open_counts *out) {
    __atomic_load(&g_open_counts.in_place, &out->in_place, __ATOMIC_RELAXED);
    __atomic_load(&g_open_counts.verified, &out->verified, __ATOMIC_RELAXED);
    __atomic_load(&g_open_counts.in_memory, &out->in_memory, __ATOMIC_RELAXED);
    __atomic_load(&g_open_counts.built, &out->built, __ATOMIC_RELAXED);
}

void ax_memscan_index_free(ax_memscan_index_t *idx) {
    if (!idx) return;
    ax_ms_table_free(&idx->t);
    ax_ms_occ_free(&idx->occ);
    ax_ms_map_free(idx->map);
    free(idx->edge);
    ax_grid_free(idx->grid);
    free(idx);
}

void ax_memscan_index_comm_stats(const ax_memscan_index_t *idx, ax_comm_stats *out) {
    if (idx->grid)
        ax_comm_stats_get(idx->grid, out);
    else
        memset(out, 0, sizeof *out);
}

const ax_memscan_info *ax_memscan_index_info(const ax_memscan_index_t *idx) {
    return &idx->info;
}
const ax_axd_t *ax_memscan_index_dataset(const ax_memscan_index_t *idx) {
    return idx->ds;
}
size_t ax_memscan_index_table_bytes(const ax_memscan_index_t *idx) {
    return idx->map ? ax_ms_map_table_bytes(idx->map) : ax_ms_table_bytes(&idx->t);
}
uint64_t ax_memscan_index_local_entries(const ax_memscan_index_t *idx) {
    return idx->map ? idx->info.n_distinct : idx->t.n;
}

int ax_memscan_index_shard(const ax_memscan_index_t *idx) {
    return idx->shard_rank;
}
uint64_t ax_memscan_index_table_bytes_all(const ax_memscan_index_t *idx) {
    return idx->table_bytes_all ? idx->table_bytes_all : ax_memscan_index_table_bytes(idx);
}
size_t ax_memscan_index_occ_bytes(const ax_memscan_index_t *idx) {
    return idx->map ? ax_ms_map_occ_bytes(idx->map) : ax_ms_occ_bytes(&idx->occ);
}
uint64_t ax_memscan_index_occ_bytes_all(const ax_memscan_index_t *idx) {
    return idx->occ_bytes_all ? idx->occ_bytes_all : ax_memscan_index_occ_bytes(idx);
}
uint64_t ax_memscan_index_occurrences(const ax_memscan_index_t *idx, uint64_t first, uint32_t count,
                                      const uint64_t **list) {
    return ax_ms_index_occ(idx, first, count, list);
}

uint64_t ax_memscan_index_groups(const ax_memscan_index_t *idx) {
    return idx->map ? ax_ms_map_groups(idx->map) : idx->occ.n_groups;
}

uint64_t ax_memscan_index_group(const ax_memscan_index_t *idx, uint64_t g, const uint64_t **list) {
    if (idx->map) return ax_ms_map_group(idx->map, idx->info.n, g, list);
    *list = NULL;
    if (g >= idx->occ.n_groups) return 0;
    *list = idx->occ.pos + idx->occ.off[g];
    return idx->occ.off[g + 1] - idx->occ.off[g];
}

int ax_memscan_index_owner(const ax_memscan_index_t *idx, const int32_t *window) {
    if (idx->shard_size <= 1) return 0;
    uint64_t h = ax_ms_hash(window, (int)idx->info.n, idx->info.seed, (int)idx->info.hash_bits);
    return ax_ms_owner(h, idx->shard_size);
}

void ax_ms_built_stats(const ax_memscan_index_t *idx, ax_memscan_info *info) {
    for (int i = 0; i < AX_MEMSCAN_HIST; i++) info->hist[i] = (uint64_t)idx->hist_moved[i];
    info->hist[0] += idx->t.n;
    info->n_saturated = idx->n_saturated_built;
    info->n_distinct = idx->t.n;
}

char *ax_memscan_info_json(const ax_memscan_info *in) {
    ax_jw w;
    ax_jw_init(&w);
    char hex[32];
    ax_jw_obj_begin(&w);
    ax_jw_key(&w, "schema"), ax_jw_str(&w, "axmem.memscan.index/1");
    ax_jw_key(&w, "n"), ax_jw_uint(&w, in->n);
    ax_jw_key(&w, "hash_bits"), ax_jw_uint(&w, in->hash_bits);
    ax_jw_key(&w, "seed");
    snprintf(hex, sizeof hex, "0x%016llx", (unsigned long long)in->seed);
    ax_jw_str(&w, hex);
    ax_jw_key(&w, "dataset");
    ax_jw_obj_begin(&w);
    ax_jw_key(&w, "path"), ax_jw_str(&w, in->ds_path);
    ax_jw_key(&w, "checksum");
    snprintf(hex, sizeof hex, "0x%016llx", (unsigned long long)in->ds_checksum);
    ax_jw_str(&w, hex);
    ax_jw_key(&w, "tokens"), ax_jw_uint(&w, in->ds_tokens);
    ax_jw_key(&w, "docs"), ax_jw_uint(&w, in->ds_docs);
    ax_jw_key(&w, "vocab_size"), ax_jw_uint(&w, in->vocab);
    ax_jw_key(&w, "tokenizer_checksum");
    snprintf(hex, sizeof hex, "0x%016llx", (unsigned long long)in->tok_checksum);
    ax_jw_str(&w, hex);
    ax_jw_obj_end(&w);
    ax_jw_key(&w, "windows"), ax_jw_uint(&w, in->n_windows);
    ax_jw_key(&w, "distinct_windows"), ax_jw_uint(&w, in->n_distinct);
    ax_jw_key(&w, "duplication_histogram");
    ax_jw_obj_begin(&w);
    for (int i = 0; i < AX_MEMSCAN_HIST; i++) {
        ax_jw_key(&w, ax_memscan_hist_labels[i]);
        ax_jw_uint(&w, in->hist[i]);
    }
    ax_jw_obj_end(&w);
    ax_jw_key(&w, "saturated_counts"), ax_jw_uint(&w, in->n_saturated);
    ax_jw_key(&w, "occurrence_lists");
    ax_jw_obj_begin(&w);
    ax_jw_key(&w, "windows"), ax_jw_uint(&w, in->n_dup);
    ax_jw_key(&w, "positions"), ax_jw_uint(&w, in->n_dup_pos);
    ax_jw_obj_end(&w);
    ax_jw_key(&w, "build_ranks"), ax_jw_uint(&w, in->build_ranks);
    ax_jw_obj_end(&w);
    const char *t = ax_jw_text(&w);
    char *out = t ? strdup(t) : NULL;
    ax_jw_free(&w);
    return out;
}
