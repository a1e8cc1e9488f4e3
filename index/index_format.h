/* The memscan index file format (layout in index/index.h): header and block codecs shared
 * by saving, loading and `memscan info`. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "index/index.h"
#include "index/occ.h"
#include "index/table.h"

#define AX_MS_MAGIC "AXMEMIDX"
#define AX_MS_TRAILER "AXIDXEND"
#define AX_MS_VERSION 3u    /* written */
#define AX_MS_VERSION_V2 2u /* still read (loaded into memory) */
#define AX_MS_HEADER_FIXED 136
#define AX_MS_BLOCK_HEADER 32
#define AX_MS_TRAILER_BYTES 32
#define AX_MS_BLOCK_ENTRIES (1u << 20)
#define AX_MS_ENTRY_BYTES 13 /* u32 tag + u8 ext + u64 val */
#define AX_MS_REBUILD "rebuild it with `axmem memscan index`"

/* header bytes (fixed part + path + checksum) of a file of `version` into a malloc'd buffer */
int ax_ms_header_encode(const ax_memscan_info *in, uint32_t version, uint8_t **buf, size_t *len);
/* reads and checks the header from f (version 2 or 3, into *version); errors name `path` */
ax_status ax_ms_header_read(FILE *f, const char *path, ax_memscan_info *in, uint32_t *version);

/* A block: k entries (keys, vals) -> zstd payload with its header. */
typedef struct {
    uint8_t *raw, *comp;
    size_t raw_cap, comp_cap;
    void *zctx; /* ZSTD_CCtx or ZSTD_DCtx */
} ax_ms_block_buf;

void ax_ms_block_buf_free(ax_ms_block_buf *b, int compress);
/* hdr (32 bytes) + b->comp[0..*comp_len) */
ax_status ax_ms_block_encode(ax_ms_block_buf *b, const ax_ms_key *keys, const uint64_t *vals,
                             size_t k, uint8_t hdr[AX_MS_BLOCK_HEADER], size_t *comp_len);

/* A list block: k u64 values of the occurrence-list stream (index.h) -> zstd, same header. */
ax_status ax_ms_block_encode_u64(ax_ms_block_buf *b, const uint64_t *v, size_t k,
                                 uint8_t hdr[AX_MS_BLOCK_HEADER], size_t *comp_len);

/* Walks occurrence lists as the file's value stream, a block (<= AX_MS_BLOCK_ENTRIES values)
 * at a time. */
typedef struct {
    const ax_ms_occ *o;
    uint64_t g, j; /* next: list g, value j (0 = its length, then positions 1..m) */
} ax_ms_list_iter;
/* fills v with the next values; returns how many (0 at the end) */
size_t ax_ms_list_next(ax_ms_list_iter *it, uint64_t *v, size_t cap);

/* Streams blocks from f (positioned after the header): calls `fn` on each table block's
 * entries, then reads the occurrence lists (into *occ, allocated here, when occ is not NULL),
 * then checks the trailer and the end of file, the histogram and the list sizes. */
typedef ax_status (*ax_ms_entry_fn)(void *ctx, const ax_ms_key *keys, const uint64_t *vals,
                                    size_t k);
ax_status ax_ms_blocks_read(FILE *f, const char *path, const ax_memscan_info *in, ax_ms_entry_fn fn,
                            void *ctx, ax_ms_occ *occ);
/* The same, also calling lfn on each occurrence list (positions ascending) as it is read. */
typedef ax_status (*ax_ms_list_fn)(void *ctx, const uint64_t *pos, uint64_t m);
ax_status ax_ms_blocks_read_ex(FILE *f, const char *path, const ax_memscan_info *in,
                               ax_ms_entry_fn fn, void *ctx, ax_ms_occ *occ, ax_ms_list_fn lfn,
                               void *lctx);

void ax_ms_put32(uint8_t *p, uint32_t v);
void ax_ms_put64(uint8_t *p, uint64_t v);
uint32_t ax_ms_get32(const uint8_t *p);
uint64_t ax_ms_get64(const uint8_t *p);
