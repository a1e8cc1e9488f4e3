/* Loading a saved index into one process (whatever number of ranks built it), and reading its
 * header for `memscan info`. */
#include "lib/core/fsutil.h"
#include "index/index_format.h"
#include "index/index_impl.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* only a regular file: a FIFO or device named as the index would block or read garbage */
static ax_status open_index(const char *path, FILE **f) {
    char hint[4200];
    snprintf(hint, sizeof hint,
             "pass a memscan index file, or build one with `axmem memscan index --data FILE.axd "
             "--out %s`",
             path);
    AX_CHECK(ax_fopen_regular(path, hint, f));
    setvbuf(*f, NULL, _IOFBF, 1 << 20);
    return AX_OK;
}

ax_status ax_memscan_index_read_info(const char *path, int verify_blocks, ax_memscan_info *info) {
    FILE *f;
    AX_CHECK(open_index(path, &f));
    uint32_t ver = 0;
    ax_status st = ax_ms_header_read(f, path, info, &ver);
    if (st == AX_OK && ver == AX_MS_VERSION_V2 && verify_blocks)
        st = ax_ms_blocks_read(f, path, info, NULL, NULL, NULL);
    if (st == AX_OK && ver == AX_MS_VERSION) { /* the section table, and everything if asked */
        ax_ms_map *m = NULL;
        st = ax_ms_map_open(f, path, info, (uint64_t)ftell(f), verify_blocks, &m);
        ax_ms_map_free(m);
    }
    fclose(f);
    return st;
}

static ax_status check_dataset(const char *path, const ax_memscan_info *in, const ax_axd_t *ds) {
    uint64_t tk = ax_axd_tokenizer_checksum(ds);
    if (in->ds_checksum == ax_axd_checksum(ds) && in->ds_tokens == ax_axd_n_tokens(ds) &&
        in->ds_docs == ax_axd_n_docs(ds) && in->vocab == ax_axd_vocab_size(ds)) {
        /* same tokens; the tokenizer identity lives in the dataset's header, outside its
         * payload checksum, so compare it too (0 = unknown on either side) */
        if (in->tok_checksum && tk && in->tok_checksum != tk)
            return ax_errorf(AX_ERR_MISMATCH,
                             "index %s records tokenizer %016llx but dataset %s records "
                             "%016llx; rebuild the index from this dataset",
                             path, (unsigned long long)in->tok_checksum, ax_axd_path(ds),
                             (unsigned long long)tk);
        return AX_OK;
    }
    return ax_errorf(
        AX_ERR_MISMATCH,
        "index %s was built from a different dataset than %s (index: %llu tokens, "
        "%llu docs, checksum %016llx, built from %s; dataset: %llu tokens, %llu "
        "docs, checksum %016llx); pass the dataset the index was built from, or "
        "rebuild the index from this one",
        path, ax_axd_path(ds), (unsigned long long)in->ds_tokens, (unsigned long long)in->ds_docs,
        (unsigned long long)in->ds_checksum, in->ds_path, (unsigned long long)ax_axd_n_tokens(ds),
        (unsigned long long)ax_axd_n_docs(ds), (unsigned long long)ax_axd_checksum(ds));
}

static ax_status put_block(void *ctx, const ax_ms_key *keys, const uint64_t *vals, size_t k) {
    ax_ms_table *t = ctx;
    for (size_t i = 0; i < k; i++) ax_ms_table_put_new(t, keys[i], vals[i]);
    return AX_OK;
}

static ax_status open_any(const char *path, const ax_axd_t *ds, int verify_all,
                          ax_memscan_index_t **out) {
    *out = NULL;
    FILE *f;
    AX_CHECK(open_index(path, &f));
    ax_memscan_index_t *idx = calloc(1, sizeof *idx);
    uint32_t ver = 0;
    ax_status st = idx ? AX_OK : ax_errorf(AX_ERR_NOMEM, "%s: out of memory", path);
    if (st == AX_OK) st = ax_ms_header_read(f, path, &idx->info, &ver);
    /* Nothing is sized from the header before it is bounded: the header read checks distinct
     * <= windows <= tokens (and so the occurrence lists' windows - hist[0] positions), and
     * check_dataset that those tokens are the dataset's. A 265-byte file claiming 1.4e9
     * distinct windows once made this allocate ~20 GB (tests/fuzz/repro/index-*). */
    if (st == AX_OK) st = check_dataset(path, &idx->info, ds);
    if (st == AX_OK && ver == AX_MS_VERSION) {
        /* read in place: nothing is built (the mapping outlives the stream) */
        st = ax_ms_map_open(f, path, &idx->info, (uint64_t)ftell(f), verify_all, &idx->map);
        if (st == AX_OK) ax_ms_count_open(offsetof(ax_memscan_open_counts, in_place));
        if (st == AX_OK && verify_all) ax_ms_count_open(offsetof(ax_memscan_open_counts, verified));
    } else if (st == AX_OK) { /* version 2: loaded into a table, as it was written */
        ax_ms_count_open(offsetof(ax_memscan_open_counts, in_memory));
        st = ax_ms_table_init(&idx->t, idx->info.n_distinct);
        if (st == AX_OK) st = ax_ms_blocks_read(f, path, &idx->info, put_block, &idx->t, &idx->occ);
        if (st == AX_OK) st = ax_ms_occ_sort_groups(&idx->occ);
    }
    fclose(f);
    if (st != AX_OK) {
        ax_memscan_index_free(idx);
        return st;
    }
    idx->ds = ds;
    idx->shard_rank = 0;
    idx->shard_size = 1;
    *out = idx;
    return AX_OK;
}

ax_status ax_memscan_index_load(const char *path, const ax_axd_t *ds, ax_memscan_index_t **out) {
    return open_any(path, ds, 1, out);
}

ax_status ax_memscan_index_open(const char *path, const ax_axd_t *ds, ax_memscan_index_t **out) {
    return open_any(path, ds, 0, out);
}

ax_status ax_memscan_index_check(const ax_memscan_index_t *idx) {
    return idx->map ? ax_ms_map_status(idx->map) : AX_OK;
}

uint64_t ax_memscan_index_damage_met(const ax_memscan_index_t *idx) {
    return idx->map ? ax_ms_map_damage_met(idx->map) : 0;
}
