/* libFuzzer target: memscan index files (index/index_load.c, index_map.c): the header/info
 * read with block verification, the verified load and the lazy in-place open (version 3) against
 * a small dataset built at start-up (the one the seed indexes were built from), then lookups
 * through whatever opened. Seeds: the same index as version 3 and as version 2. */
#include "data/axd.h"
#include "fuzz_util.h"

#include <xxhash.h>
#include <zstd.h>
#include "index/index.h"

static char idx_path[512];
static ax_axd_t *ds;
static int32_t probe_tokens[96];
static size_t n_probe;

/* documents with repeats, so the index has counts > 1 and spans across documents */
static void make_dataset(const char *path) {
    ax_axd_writer_t *w;
    if (ax_axd_writer_create(path, 300, &w) != AX_OK) abort();
    int32_t t[40];
    for (int d = 0; d < 24; d++) {
        int len = 5 + (d * 7) % 30, base = d % 5 == 0 ? 0 : d; /* every 5th doc repeats doc 0 */
        for (int i = 0; i < len; i++) t[i] = (int32_t)((base * 13 + i * 5) % 250);
        if (ax_axd_writer_add_doc(w, t, (size_t)len) != AX_OK) abort();
    }
    if (ax_axd_writer_close(w) != AX_OK) abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fz_init("index");
    char dpath[512], seed_idx[512];
    fz_path(dpath, sizeof dpath, "train.axd");
    fz_path(seed_idx, sizeof seed_idx, "seed.idx");
    fz_path(idx_path, sizeof idx_path, "fuzz.idx");
    make_dataset(dpath);
    if (ax_axd_open(dpath, AX_AXD_VERIFY, &ds) != AX_OK) abort();
    ax_memscan_build_opts o;
    ax_memscan_build_opts_default(&o);
    o.n = 4;
    o.progress = 0;
    ax_memscan_index_t *idx;
    if (ax_memscan_index_build(ds, &o, &idx) != AX_OK ||
        ax_memscan_index_save(idx, seed_idx, NULL) != AX_OK) {
        fprintf(stderr, "%s\n", ax_error_msg());
        abort();
    }
    ax_memscan_index_free(idx);
    /* lookups use a passage from the data (spans to find) followed by unseen tokens */
    n_probe = 60;
    ax_axd_tokens(ds, 3, n_probe, probe_tokens);
    for (size_t i = n_probe; i < 96; i++) probe_tokens[i] = (int32_t)(i * 3 % 299);
    n_probe = 96;
    if (fz_seed_dir()) {
        char *text;
        size_t len;
        if (ax_read_file(seed_idx, &text, &len) != AX_OK) abort();
        fz_write_seed("n4.idx", text, len);
        free(text);
        char v2[512];
        fz_path(v2, sizeof v2, "seed-v2.idx");
        if (ax_memscan_index_build(ds, &o, &idx) != AX_OK ||
            ax_memscan_index_save_v2(idx, v2, NULL) != AX_OK ||
            ax_read_file(v2, &text, &len) != AX_OK)
            abort();
        ax_memscan_index_free(idx);
        fz_write_seed("n4-v2.idx", text, len);
        free(text);
        exit(0);
    }
    return 0;
}

static uint64_t get64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* Recomputes every checksum of the format (index/index.h, version 2: header, each block's
 * header and payload, trailer) where the structure allows, so mutations reach the checks
 * behind them. Table blocks hold 13-byte entries, list blocks 8-byte values: decompressing
 * into room for the larger and hashing what came out fits both. */
#define HDR_FIXED 136 /* bytes before the dataset path */
#define V3_EXT 112
/* version 3: the pages' sums, the sums' checksum, the section table's checksum */
static void fix_v3(uint8_t *m, size_t size, size_t ext) {
    if (ext + V3_EXT > size) return;
    uint32_t page_bits;
    memcpy(&page_bits, m + ext + 4, 4);
    uint64_t dir = get64(m + ext + 8 + 8 * 2), sums = get64(m + ext + 8 + 8 * 9);
    if (page_bits < 12 || page_bits > 24 || dir > sums || sums > size) return;
    uint64_t ps = 1ULL << page_bits, np = (sums - dir + ps - 1) / ps;
    if (np > (size - sums) / 8) return;
    for (uint64_t p = 0; p < np; p++) {
        uint64_t a = dir + p * ps, b = a + ps < sums ? a + ps : sums;
        uint64_t h = XXH3_64bits(m + a, (size_t)(b - a));
        memcpy(m + sums + 8 * p, &h, 8);
    }
    uint64_t h = XXH3_64bits(m + sums, (size_t)(8 * np));
    memcpy(m + ext + V3_EXT - 16, &h, 8);
    h = XXH3_64bits(m + ext, V3_EXT - 8);
    memcpy(m + ext + V3_EXT - 8, &h, 8);
}

static void fix_checksums(uint8_t *m, size_t size) {
    if (size < HDR_FIXED + 8) return;
    uint32_t L;
    memcpy(&L, m + 120, 4);
    if ((uint64_t)L + HDR_FIXED + 8 > size) return;
    uint64_t h = XXH3_64bits(m, HDR_FIXED + (size_t)L);
    memcpy(m + HDR_FIXED + L, &h, 8);
    size_t pos = HDR_FIXED + 8 + (size_t)L;
    if (m[8] == 3) {
        fix_v3(m, size, pos);
        return;
    }
    while (pos + 32 <= size && memcmp(m + pos, "AXIDXEND", 8) != 0) {
        uint64_t k = get64(m + pos), c = get64(m + pos + 8);
        if (c > size - pos - 32 || k > (1u << 20)) return;
        size_t cap = (size_t)k * 13;
        uint8_t *raw = malloc(cap ? cap : 1);
        size_t got = ZSTD_decompress(raw, cap, m + pos + 32, (size_t)c);
        if (!ZSTD_isError(got)) {
            h = XXH3_64bits(raw, got);
            memcpy(m + pos + 16, &h, 8);
        }
        free(raw);
        h = XXH3_64bits(m + pos, 24);
        memcpy(m + pos + 24, &h, 8);
        pos += 32 + (size_t)c;
    }
    if (pos + 32 <= size) {
        h = XXH3_64bits(m + pos, 24);
        memcpy(m + pos + 24, &h, 8);
    }
}

static void one(const uint8_t *data, size_t size);
static void one_lazy(void);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    one(data, size);
    if (size >= HDR_FIXED + 8) { /* again with the checksums made right */
        uint8_t *c = malloc(size);
        memcpy(c, data, size);
        fix_checksums(c, size);
        one(c, size);
        free(c);
    }
    return 0;
}

static void one(const uint8_t *data, size_t size) {
    fz_write(idx_path, data, size);
    ax_memscan_info info;
    ax_error_clear();
    fz_note("info", ax_memscan_index_read_info(idx_path, 1, &info));
    ax_error_clear();
    ax_memscan_index_t *idx = NULL;
    one_lazy();
    ax_status st = ax_memscan_index_load(idx_path, ds, &idx);
    fz_note("load", st);
    if (st != AX_OK) {
        if (idx) abort();
        return;
    }
    const ax_memscan_info *in = ax_memscan_index_info(idx);
    /* what sized the allocations is bounded by the dataset it was checked against */
    if (in->n < 1 || in->n > AX_MEMSCAN_N_MAX || in->n_distinct > in->n_windows ||
        in->n_windows > ax_axd_n_tokens(ds) || in->n_dup_pos > in->n_windows)
        abort();
    ax_memscan_span *sp = NULL;
    size_t ns = 0;
    if (ax_memscan_find_spans(idx, probe_tokens, n_probe, 4, &sp, &ns) == AX_OK) {
        for (size_t k = 0; k < ns; k++) { /* every span really occurs where it says */
            if (sp[k].start + sp[k].len > n_probe || sp[k].pos + sp[k].len > ax_axd_n_tokens(ds))
                abort();
            for (size_t i = 0; i < sp[k].len; i++)
                if (ax_axd_token(ds, sp[k].pos + i) != (uint32_t)probe_tokens[sp[k].start + i])
                    abort();
        }
        free(sp);
    }
    uint32_t counts[96];
    uint64_t first[96];
    ax_memscan_index_lookup_all(idx, probe_tokens, n_probe, counts, first);
    ax_memscan_index_free(idx);
    ax_error_clear();
}

/* the lazy open: only the header, section table and directory are checked before lookups */
static void one_lazy(void) {
    ax_memscan_index_t *idx = NULL;
    ax_error_clear();
    ax_status st = ax_memscan_index_open(idx_path, ds, &idx);
    fz_note("open", st);
    if (st != AX_OK) {
        if (idx) abort();
        return;
    }
    ax_memscan_span *sp = NULL;
    size_t ns = 0;
    if (ax_memscan_find_spans(idx, probe_tokens, n_probe, 4, &sp, &ns) == AX_OK) {
        for (size_t k = 0; k < ns; k++)
            for (size_t i = 0; i < sp[k].len; i++)
                if (sp[k].pos + sp[k].len > ax_axd_n_tokens(ds) ||
                    ax_axd_token(ds, sp[k].pos + i) != (uint32_t)probe_tokens[sp[k].start + i])
                    abort();
        free(sp);
    }
    fz_note("check", ax_memscan_index_check(idx));
    ax_memscan_index_free(idx);
    ax_error_clear();
}
