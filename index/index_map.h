/* Version-3 memscan index files, read in place through mmap (layout in index/index.h).
 *
 * Opening checks the header, the v3 extension (section offsets, sizes, the file size), the
 * page-checksum array and the pages holding the partition directory, and nothing else: no
 * table is built and nothing proportional to the index is allocated (one byte per 64 KiB page
 * for the "verified" marks). Every other page is hashed the first time a lookup touches it
 * (or all at once with verify_all); a page whose checksum is wrong makes the lookups that need
 * it answer "absent", counts the refusal (ax_ms_map_damage_met: callers compare it before and
 * after a query to fail that query) and leaves a sticky error (ax_ms_map_status) naming the
 * file, the page and its section. Values read from the file are bounds-checked where they index
 * anything, so a crafted file with right checksums can give wrong answers but never read out of
 * bounds. */
#pragma once
#include <stdint.h>
#include <stdio.h>

#include "data/axd.h"
#include "index/index.h"

#define AX_MS_V3_EXT 112           /* extension bytes after the v2-style header */
#define AX_MS_V3_PAGE_BITS 16      /* checksummed pages of 64 KiB */
#define AX_MS_V3_ALIGN 64          /* sections start on cache lines */
#define AX_MS_V3_PART_ENTRIES 2048 /* target entries per partition */
#define AX_MS_V3_PART_BITS_MAX 24

/* the extension's fields (file offsets in bytes) */
typedef struct {
    uint32_t part_bits, page_bits;
    uint64_t n_groups, n_pos;
    uint64_t off_dir, off_tags, off_exts, off_vals, off_firsts, off_lstart, off_pos, off_sums;
    uint64_t file_size, sums_xxh;
} ax_ms_v3_layout;

/* Offsets of every section for an index of `distinct` entries and the given lists, placed
 * after a header of hdr_len bytes. */
void ax_ms_v3_layout_plan(ax_ms_v3_layout *l, uint64_t hdr_len, uint64_t distinct,
                          uint64_t n_groups, uint64_t n_pos);
uint32_t ax_ms_v3_part_bits(uint64_t distinct);
void ax_ms_v3_ext_encode(const ax_ms_v3_layout *l, uint8_t out[AX_MS_V3_EXT]);
/* the partition of a tag: its top part_bits bits */
static inline uint64_t ax_ms_v3_part(uint32_t tag, uint32_t part_bits) {
    return part_bits ? tag >> (32 - part_bits) : 0;
}

typedef struct ax_ms_map ax_ms_map;

/* Maps the v3 file open as f (positioned after the v2-style header `in`, hdr_len bytes). */
ax_status ax_ms_map_open(FILE *f, const char *path, const ax_memscan_info *in, uint64_t hdr_len,
                         int verify_all, ax_ms_map **out);
void ax_ms_map_free(ax_ms_map *m);
/* AX_OK, or the first damage a lookup met (the error is set again each call). */
ax_status ax_ms_map_status(const ax_ms_map *m);
/* How many times lookups met damage so far (every time, not only the first). */
uint64_t ax_ms_map_damage_met(const ax_ms_map *m);
size_t ax_ms_map_table_bytes(const ax_ms_map *m);
size_t ax_ms_map_occ_bytes(const ax_ms_map *m);

/* The entry of the window with hash h, confirmed against ds: 1 with its count and first. */
int ax_ms_map_find(const ax_ms_map *m, const ax_axd_t *ds, uint32_t n, uint64_t h, const int32_t *w,
                   uint32_t *count, uint64_t *first);
/* Hint: the tags and values where h should lie in its partition. */
void ax_ms_map_prefetch(const ax_ms_map *m, uint64_t h);
/* The occurrence list of the window first seen at `first` (ascending, checked); 0 if none. */
uint64_t ax_ms_map_occ(const ax_ms_map *m, const ax_axd_t *ds, uint32_t n, uint64_t first,
                       const uint64_t **list);
/* Lists by their rank in ascending order of first occurrence: how many, and list g (checked as
 * ax_ms_map_occ checks; 0 if damaged). */
uint64_t ax_ms_map_groups(const ax_ms_map *m);
uint64_t ax_ms_map_group(const ax_ms_map *m, uint32_t n, uint64_t g, const uint64_t **list);
