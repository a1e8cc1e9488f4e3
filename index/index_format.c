#include "index/index_format.h"
#include "index/index_impl.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#include <zstd.h>

void ax_ms_put32(uint8_t *p, uint32_t v) {
    memcpy(p, &v, 4);
}
void ax_ms_put64(uint8_t *p, uint64_t v) {
    memcpy(p, &v, 8);
}
uint32_t ax_ms_get32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}
uint64_t ax_ms_get64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

int ax_ms_header_encode(const ax_memscan_info *in, uint32_t version, uint8_t **buf, size_t *len) {
    size_t L = strlen(in->ds_path);
    size_t n = AX_MS_HEADER_FIXED + L + 8;
    uint8_t *h = calloc(1, n);
    if (!h) return -1;
    memcpy(h, AX_MS_MAGIC, 8);
    ax_ms_put32(h + 8, version);
    ax_ms_put32(h + 12, in->n);
    ax_ms_put32(h + 16, in->hash_bits);
    ax_ms_put32(h + 20, in->vocab);
    ax_ms_put64(h + 24, in->seed);
    ax_ms_put64(h + 32, in->ds_checksum);
    ax_ms_put64(h + 40, in->ds_tokens);
    ax_ms_put64(h + 48, in->ds_docs);
    ax_ms_put64(h + 56, in->n_distinct);
    ax_ms_put64(h + 64, in->n_windows);
    for (int i = 0; i < AX_MEMSCAN_HIST; i++) ax_ms_put64(h + 72 + 8 * i, in->hist[i]);
    ax_ms_put64(h + 112, in->n_saturated);
    ax_ms_put32(h + 120, (uint32_t)L);
    ax_ms_put32(h + 124, in->build_ranks);
    ax_ms_put64(h + 128, in->tok_checksum);
    memcpy(h + AX_MS_HEADER_FIXED, in->ds_path, L);
    ax_ms_put64(h + AX_MS_HEADER_FIXED + L, XXH3_64bits(h, AX_MS_HEADER_FIXED + L));
    *buf = h;
    *len = n;
    return 0;
}

static ax_status truncated(const char *path, const char *what) {
    return ax_errorf(AX_ERR_CORRUPT, "%s: truncated memscan index (ends inside %s); " AX_MS_REBUILD,
                     path, what);
}

ax_status ax_ms_header_read(FILE *f, const char *path, ax_memscan_info *in, uint32_t *version_out) {
    uint8_t h[AX_MS_HEADER_FIXED + sizeof in->ds_path + 8];
    size_t got = fread(h, 1, AX_MS_HEADER_FIXED, f);
    if (got < 8 || memcmp(h, AX_MS_MAGIC, 8) != 0)
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: not a memscan index (bad magic); build one with `axmem memscan "
                         "index --data FILE.axd --out INDEX`",
                         path);
    if (got < AX_MS_HEADER_FIXED) return truncated(path, "the header");
    uint32_t version = ax_ms_get32(h + 8);
    if (version == 1)
        return ax_errorf(AX_ERR_MISMATCH,
                         "%s: memscan index format version 1 has no occurrence lists (its spans "
                         "would only be lower bounds) and no tokenizer identity; " AX_MS_REBUILD,
                         path);
    if (version != AX_MS_VERSION && version != AX_MS_VERSION_V2)
        return ax_errorf(AX_ERR_MISMATCH,
                         "%s: memscan index format version %u, this build reads versions %u and "
                         "%u; " AX_MS_REBUILD,
                         path, version, AX_MS_VERSION_V2, AX_MS_VERSION);
    *version_out = version;
    uint32_t L = ax_ms_get32(h + 120);
    if (L >= sizeof in->ds_path)
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: corrupt memscan index header (path length %u); " AX_MS_REBUILD, path,
                         L);
    if (fread(h + AX_MS_HEADER_FIXED, 1, (size_t)L + 8, f) != (size_t)L + 8)
        return truncated(path, "the header");
    if (XXH3_64bits(h, AX_MS_HEADER_FIXED + L) != ax_ms_get64(h + AX_MS_HEADER_FIXED + L))
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: header checksum mismatch: the index is corrupt; " AX_MS_REBUILD,
                         path);
    memset(in, 0, sizeof *in);
    in->n = ax_ms_get32(h + 12);
    in->hash_bits = ax_ms_get32(h + 16);
    in->vocab = ax_ms_get32(h + 20);
    in->seed = ax_ms_get64(h + 24);
    in->ds_checksum = ax_ms_get64(h + 32);
    in->ds_tokens = ax_ms_get64(h + 40);
    in->ds_docs = ax_ms_get64(h + 48);
    in->n_distinct = ax_ms_get64(h + 56);
    in->n_windows = ax_ms_get64(h + 64);
    for (int i = 0; i < AX_MEMSCAN_HIST; i++) in->hist[i] = ax_ms_get64(h + 72 + 8 * i);
    in->n_saturated = ax_ms_get64(h + 112);
    in->build_ranks = ax_ms_get32(h + 124);
    in->tok_checksum = ax_ms_get64(h + 128);
    memcpy(in->ds_path, h + AX_MS_HEADER_FIXED, L);
    in->ds_path[L] = 0;
    ax_ms_occ_info(in);
    if (in->n < 1 || in->n > AX_MEMSCAN_N_MAX || in->hash_bits < 1 || in->hash_bits > 64 ||
        in->n_distinct > in->n_windows || in->n_windows > in->ds_tokens ||
        in->hist[0] > in->n_distinct || in->ds_tokens > AX_MS_POS_MAX)
        return ax_errorf(AX_ERR_CORRUPT, "%s: inconsistent memscan index header; " AX_MS_REBUILD,
                         path);
    return AX_OK;
}

void ax_ms_block_buf_free(ax_ms_block_buf *b, int compress) {
    free(b->raw);
    free(b->comp);
    if (compress)
        ZSTD_freeCCtx(b->zctx);
    else
        ZSTD_freeDCtx(b->zctx);
    memset(b, 0, sizeof *b);
}

static int reserve(uint8_t **p, size_t *cap, size_t need) {
    if (*cap >= need) return 0;
    uint8_t *np = realloc(*p, need);
    if (!np) return -1;
    *p = np;
    *cap = need;
    return 0;
}

/* Columns: tag deltas (tags come out of the table in bucket order, so the deltas are small
 * and compress), then the 6-bit exts one byte each, then vals (count and first position). */
ax_status ax_ms_block_encode(ax_ms_block_buf *b, const ax_ms_key *keys, const uint64_t *vals,
                             size_t k, uint8_t hdr[AX_MS_BLOCK_HEADER], size_t *comp_len) {
    size_t raw = k * AX_MS_ENTRY_BYTES, bound = ZSTD_compressBound(raw);
    if (!b->zctx) b->zctx = ZSTD_createCCtx();
    if (!b->zctx || reserve(&b->raw, &b->raw_cap, raw) || reserve(&b->comp, &b->comp_cap, bound))
        return ax_errorf(AX_ERR_NOMEM, "memscan: out of memory compressing the index");
    uint32_t prev = 0;
    for (size_t i = 0; i < k; i++) {
        ax_ms_put32(b->raw + 4 * i, keys[i].tag - prev);
        prev = keys[i].tag;
        b->raw[4 * k + i] = (uint8_t)keys[i].ext;
    }
    memcpy(b->raw + 5 * k, vals, 8 * k);
    size_t c = ZSTD_compressCCtx(b->zctx, b->comp, bound, b->raw, raw, 1);
    if (ZSTD_isError(c))
        return ax_errorf(AX_ERR_INTERNAL, "memscan: zstd compression failed: %s",
                         ZSTD_getErrorName(c));
    ax_ms_put64(hdr, k);
    ax_ms_put64(hdr + 8, c);
    ax_ms_put64(hdr + 16, XXH3_64bits(b->raw, raw));
    ax_ms_put64(hdr + 24, XXH3_64bits(hdr, 24));
    *comp_len = c;
    return AX_OK;
}

ax_status ax_ms_block_encode_u64(ax_ms_block_buf *b, const uint64_t *v, size_t k,
                                 uint8_t hdr[AX_MS_BLOCK_HEADER], size_t *comp_len) {
    size_t raw = 8 * k, bound = ZSTD_compressBound(raw);
    if (!b->zctx) b->zctx = ZSTD_createCCtx();
    if (!b->zctx || reserve(&b->comp, &b->comp_cap, bound))
        return ax_errorf(AX_ERR_NOMEM, "memscan: out of memory compressing the index");
    size_t c = ZSTD_compressCCtx(b->zctx, b->comp, bound, v, raw, 1);
    if (ZSTD_isError(c))
        return ax_errorf(AX_ERR_INTERNAL, "memscan: zstd compression failed: %s",
                         ZSTD_getErrorName(c));
    ax_ms_put64(hdr, k);
    ax_ms_put64(hdr + 8, c);
    ax_ms_put64(hdr + 16, XXH3_64bits(v, raw));
    ax_ms_put64(hdr + 24, XXH3_64bits(hdr, 24));
    *comp_len = c;
    return AX_OK;
}

size_t ax_ms_list_next(ax_ms_list_iter *it, uint64_t *v, size_t cap) {
    const ax_ms_occ *o = it->o;
    size_t k = 0;
    while (k < cap && it->g < o->n_groups) {
        const uint64_t *p = o->pos + o->off[it->g];
        uint64_t m = o->off[it->g + 1] - o->off[it->g];
        if (it->j == 0)
            v[k++] = m;
        else
            v[k++] = it->j == 1 ? p[0] : p[it->j - 1] - p[it->j - 2];
        if (++it->j > m) it->g++, it->j = 0;
    }
    return k;
}

static ax_status corrupt_block(const char *path, uint64_t blk, const char *what) {
    return ax_errorf(AX_ERR_CORRUPT, "%s: block %llu %s: the index is corrupt; " AX_MS_REBUILD,
                     path, (unsigned long long)blk, what);
}

/* One block's header and payload from f into b->raw (raw bytes expected from k: raw_of(k)). */
static ax_status read_block(FILE *f, const char *path, uint64_t blk, ax_ms_block_buf *b,
                            uint64_t k_max, size_t entry_bytes, uint64_t *k_out) {
    uint8_t hdr[AX_MS_BLOCK_HEADER];
    if (fread(hdr, 1, sizeof hdr, f) != sizeof hdr) return truncated(path, "a block header");
    if (XXH3_64bits(hdr, 24) != ax_ms_get64(hdr + 24))
        return corrupt_block(path, blk, "header checksum mismatch");
    uint64_t k = ax_ms_get64(hdr), c = ax_ms_get64(hdr + 8);
    size_t raw = (size_t)k * entry_bytes;
    if (k < 1 || k > AX_MS_BLOCK_ENTRIES || k > k_max || c > ZSTD_compressBound(raw))
        return corrupt_block(path, blk, "has impossible sizes");
    if (reserve(&b->comp, &b->comp_cap, c) || reserve(&b->raw, &b->raw_cap, raw))
        return ax_errorf(AX_ERR_NOMEM, "%s: out of memory reading the index", path);
    if (fread(b->comp, 1, c, f) != c) return truncated(path, "a block");
    size_t d = ZSTD_decompressDCtx(b->zctx, b->raw, raw, b->comp, c);
    if (ZSTD_isError(d) || d != raw) return corrupt_block(path, blk, "does not decompress");
    if (XXH3_64bits(b->raw, raw) != ax_ms_get64(hdr + 16))
        return corrupt_block(path, blk, "checksum mismatch");
    *k_out = k;
    return AX_OK;
}

/* The occurrence-list stream: in->n_dup lists holding in->n_dup_pos positions. */
static ax_status read_lists(FILE *f, const char *path, const ax_memscan_info *in,
                            ax_ms_block_buf *b, uint64_t *blk, ax_ms_occ *occ, ax_ms_list_fn lfn,
                            void *lctx) {
    uint64_t *lb = NULL; /* the current list, for lfn */
    size_t lb_cap = 0;
    uint64_t total = in->n_dup + in->n_dup_pos, got = 0;
    uint64_t g = 0, k_pos = 0;       /* lists started, positions read */
    uint64_t m = 0, j = 0, prev = 0; /* the current list: length, positions read, last one */
    if (occ) {
        memset(occ, 0, sizeof *occ);
        occ->off = malloc(sizeof *occ->off * (size_t)(in->n_dup + 1));
        occ->pos = malloc(sizeof *occ->pos * (size_t)(in->n_dup_pos ? in->n_dup_pos : 1));
        if (!occ->off || !occ->pos) {
            ax_ms_occ_free(occ);
            return ax_errorf(AX_ERR_NOMEM, "%s: out of memory for %llu occurrence-list positions",
                             path, (unsigned long long)in->n_dup_pos);
        }
    }
    ax_status st = AX_OK;
    while (st == AX_OK && got < total) {
        uint64_t k;
        if ((st = read_block(f, path, *blk, b, total - got, 8, &k)) != AX_OK) break;
        for (uint64_t i = 0; i < k; i++) {
            uint64_t v = ax_ms_get64(b->raw + 8 * i);
            if (j == m) { /* a list's length */
                if (v < 2 || g == in->n_dup || v > in->n_dup_pos - k_pos) {
                    st = corrupt_block(path, *blk, "holds an impossible occurrence list");
                    break;
                }
                if (occ) occ->off[g] = k_pos;
                g++, m = v, j = 0;
                if (lfn && v > lb_cap) {
                    uint64_t *nb = realloc(lb, sizeof *lb * (size_t)v);
                    if (!nb) {
                        st = ax_errorf(AX_ERR_NOMEM, "%s: out of memory for a list", path);
                        break;
                    }
                    lb = nb;
                    lb_cap = (size_t)v;
                }
                continue;
            }
            /* the first position absolute, then differences (ascending: each >= 1) */
            uint64_t p = j == 0 ? v : prev + v;
            if ((j > 0 && (v == 0 || p < prev)) || p > in->ds_tokens || in->ds_tokens - p < in->n) {
                st = corrupt_block(path, *blk, "holds an impossible occurrence position");
                break;
            }
            if (occ) occ->pos[k_pos] = p;
            if (lfn) lb[j] = p;
            k_pos++, j++, prev = p;
            if (lfn && j == m && (st = lfn(lctx, lb, m)) != AX_OK) break;
        }
        got += k;
        (*blk)++;
    }
    free(lb);
    if (st == AX_OK && (g != in->n_dup || k_pos != in->n_dup_pos || j != m))
        st = ax_errorf(AX_ERR_CORRUPT,
                       "%s: occurrence lists disagree with the header: the index is corrupt; "
                       "" AX_MS_REBUILD,
                       path);
    if (occ) {
        if (st == AX_OK) {
            occ->off[g] = k_pos;
            occ->n_groups = g;
            occ->n_pos = k_pos;
        } else {
            ax_ms_occ_free(occ);
        }
    }
    return st;
}

ax_status ax_ms_blocks_read(FILE *f, const char *path, const ax_memscan_info *in, ax_ms_entry_fn fn,
                            void *ctx, ax_ms_occ *occ) {
    return ax_ms_blocks_read_ex(f, path, in, fn, ctx, occ, NULL, NULL);
}

ax_status ax_ms_blocks_read_ex(FILE *f, const char *path, const ax_memscan_info *in,
                               ax_ms_entry_fn fn, void *ctx, ax_ms_occ *occ, ax_ms_list_fn lfn,
                               void *lctx) {
    ax_ms_block_buf b;
    memset(&b, 0, sizeof b);
    b.zctx = ZSTD_createDCtx();
    /* a table block holds at most min(2^20, distinct) entries (read_block checks k) */
    size_t cap =
        in->n_distinct < AX_MS_BLOCK_ENTRIES ? (size_t)in->n_distinct : AX_MS_BLOCK_ENTRIES;
    ax_ms_key *keys = malloc(sizeof *keys * (cap ? cap : 1));
    uint64_t *vals = malloc(sizeof *vals * (cap ? cap : 1));
    ax_status st = AX_OK;
    if (!b.zctx || !keys || !vals) {
        st = ax_errorf(AX_ERR_NOMEM, "%s: out of memory reading the index", path);
        goto done;
    }
    uint64_t got = 0, blk = 0, hist[AX_MEMSCAN_HIST] = {0}, sat = 0, windows = 0;
    while (got < in->n_distinct) {
        uint64_t k;
        if ((st = read_block(f, path, blk, &b, in->n_distinct - got, AX_MS_ENTRY_BYTES, &k)) !=
            AX_OK)
            goto done;
        uint32_t prev = 0;
        for (uint64_t i = 0; i < k; i++) {
            prev += ax_ms_get32(b.raw + 4 * i);
            keys[i].tag = prev;
            keys[i].ext = b.raw[4 * k + i];
        }
        memcpy(vals, b.raw + 5 * k, 8 * k);
        for (uint64_t i = 0; i < k; i++) {
            uint64_t c_i = ax_ms_val_count(vals[i]), p = ax_ms_val_pos(vals[i]);
            if (c_i == 0 || p + in->n > in->ds_tokens || keys[i].ext > 63) {
                st = corrupt_block(path, blk, "holds an impossible entry");
                goto done;
            }
            hist[ax_memscan_hist_bucket(c_i)]++;
            sat += c_i == AX_MS_COUNT_MAX;
            windows += c_i;
        }
        if (fn && (st = fn(ctx, keys, vals, (size_t)k)) != AX_OK) goto done;
        got += k;
        blk++;
    }
    /* saturated counts undercount, so windows can only be checked without saturation */
    if (memcmp(hist, in->hist, sizeof hist) != 0 || sat != in->n_saturated ||
        (sat == 0 && windows != in->n_windows)) {
        st = ax_errorf(AX_ERR_CORRUPT,
                       "%s: entries disagree with the header's histogram: the index is "
                       "corrupt; " AX_MS_REBUILD,
                       path);
        goto done;
    }
    if ((st = read_lists(f, path, in, &b, &blk, occ, lfn, lctx)) != AX_OK) goto done;
    uint8_t tr[AX_MS_TRAILER_BYTES];
    if (fread(tr, 1, sizeof tr, f) != sizeof tr) {
        st = truncated(path, "the trailer");
        goto done;
    }
    if (memcmp(tr, AX_MS_TRAILER, 8) != 0 || XXH3_64bits(tr, 24) != ax_ms_get64(tr + 24) ||
        ax_ms_get64(tr + 8) != blk || ax_ms_get64(tr + 16) != got) {
        st = ax_errorf(AX_ERR_CORRUPT, "%s: bad trailer: the index is corrupt; " AX_MS_REBUILD,
                       path);
        goto done;
    }
    if (fgetc(f) != EOF) {
        st = ax_errorf(AX_ERR_CORRUPT,
                       "%s: data after the trailer: the index is corrupt; " AX_MS_REBUILD, path);
        goto done;
    }
done:
    if (st != AX_OK && occ) ax_ms_occ_free(occ);
    ax_ms_block_buf_free(&b, 0);
    free(keys);
    free(vals);
    return st;
}
