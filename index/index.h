/* memscan n-gram index: every window of n tokens of a .axd dataset -> (count, first occurrence),
 * plus the list of every occurrence of each window that occurs more than once.
 *
 * Windows lie inside one document's text (its trailing end-of-text token is not part of it);
 * documents shorter than n contribute none. A window is hashed as in index/hash.h; the
 * table keeps, per distinct window, its count (saturating at 2^24 - 1) and its first
 * occurrence as a global token position (the minimum, so results do not depend on the number
 * of ranks); the document and offset are derived from the dataset's offsets. Every hit, in the
 * build and in lookups, is confirmed against the memory-mapped tokens: a hash collision never
 * merges two windows or reports a false match.
 *
 * Occurrence lists (index/occ.h): for each window occurring 2+ times, all its positions in
 * ascending order (exact, never capped), found from the table's first occurrence. They cost 8
 * bytes per position of a repeated window plus 8 per repeated window, nothing for windows
 * that occur once; they make spans exact (ax_memscan_find_spans extends against every
 * occurrence) and name every source document. The build records each repeat as it merges it
 * into the table, so no second pass over the data is needed.
 *
 * Distributed build: under MPI (initialised, > 1 rank in the MPI world: a world grid,
 * lib/dist/grid.h) rank r hashes the windows starting in its contiguous slice of token
 * positions, and each hash goes to its owner rank (index/hash.h: ax_ms_owner) with an
 * all-to-all (lib/dist/comm.h) in rounds of a fixed number of windows per rank; each owner holds
 * its shard of the table and the lists of the windows it owns. Saving writes one file however many
 * ranks built it (the shards stream to rank 0 as a version-2 file, which rank 0 reorders into
 * version 3); opening maps the whole index into one process, and any number of ranks can serve
 * one file together (ax_memscan_index_lookup_routed).
 *
 * File (little-endian), version 3 (written; read in place through mmap, index/index_map.h):
 *    0 the version-2 header below, with version 3, then its u64 XXH3 (hdr_len = 144 + L bytes)
 *  hdr_len: the section table (112 bytes): u32 part_bits (P = 2^part_bits partitions, ~2048
 *      entries each), u32 page_bits (16), u64 lists G, u64 listed positions NP, u64 offsets of
 *      dir, tags, exts, vals, firsts, lstart, pos, sums, u64 file size, u64 XXH3 of the sums,
 *      u64 XXH3 of the 104 bytes before it; every offset is the one the counts imply
 *      (sections 64-byte aligned, zero padding), so a reader checks equality, not ranges
 *    dir    u64[P + 1]  partition p (the tag's top part_bits bits) holds entries [dir[p], dir[p+1])
 *    tags   u32[distinct], exts u8[distinct], vals u64[distinct]: the table's entries in
 *           ascending (tag, ext) order (tag, ext, val as in index/table.h)
 *    firsts u64[G] ascending: each repeated window's first occurrence
 *    lstart u64[G + 1]: list g is pos[lstart[g], lstart[g+1]), ascending, starting at firsts[g]
 *    pos    u64[NP]
 *    sums   u64[pages]: XXH3 of each 64 KiB page of [dir, sums)
 * Opening checks the header, the section table, the sums' checksum and the pages holding dir;
 * other pages are hashed on first touch (all at once: ax_memscan_index_load, `info --verify`).
 * A lookup is a binary search of one partition's tags; a list is a binary search of firsts.
 *
 * Version 2 (still read: loaded into an in-memory table as before; ax_memscan_index_save_v2):
 *    0 char[8] "AXMEMIDX"      8 u32 version (2)       12 u32 n
 *   16 u32 hash_bits (64 = full XXH3)                  20 u32 dataset vocab size
 *   24 u64 hash seed          32 u64 dataset checksum (payload XXH3, ax_axd_checksum)
 *   40 u64 dataset tokens     48 u64 dataset documents
 *   56 u64 distinct windows   64 u64 windows           72 u64 hist[5]
 *  112 u64 saturated counts  120 u32 dataset path length L, 124 u32 ranks that built it
 *  128 u64 the dataset's tokenizer identity (ax_axd_tokenizer_checksum; 0 = unknown)
 *  136 char[L] dataset path (as resolved at build time), then u64 XXH3 of bytes [0, 136 + L)
 *  then table blocks until `distinct` entries are read, each:
 *      u64 entries k (<= 2^20), u64 compressed bytes c, u64 XXH3 of the uncompressed payload,
 *      u64 XXH3 of these 24 bytes; then c bytes of zstd of k entries in columns: u32 tag
 *      deltas, u8 exts, u64 vals (index/table.h: tag = hash bits 32..63, ext = bits 26..31,
 *      val = first position << 24 | count)
 *  then list blocks, with the same 32-byte header (k = u64 values, <= 2^20), until the
 *      stream of (distinct - hist[0]) lists holding (windows - hist[0]) positions is read:
 *      each list is u64 m (>= 2) then its m positions, ascending, the first absolute and the
 *      others as differences from the one before; a list may continue into the next block
 *  then the trailer: char[8] "AXIDXEND", u64 blocks (both kinds), u64 entries, u64 XXH3 of
 *      these 24 bytes.
 * Version 1 files (no lists, no tokenizer identity) are refused with "rebuild the index":
 * their spans would only be lower bounds. The histogram is also written to INDEX.json next
 * to the index, for reports. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "data/axd.h"
#include "lib/core/status.h"
#include "lib/dist/comm.h"

#define AX_MEMSCAN_N_DEFAULT 32
#define AX_MEMSCAN_N_MAX 1024
#define AX_MEMSCAN_HIST 5 /* windows occurring 1, 2-3, 4-15, 16-63, 64+ times */

typedef struct ax_memscan_index ax_memscan_index_t;

typedef struct {
    uint32_t n, hash_bits, vocab, build_ranks;
    uint64_t seed;
    uint64_t ds_checksum, ds_tokens, ds_docs;
    uint64_t n_windows, n_distinct;
    uint64_t hist[AX_MEMSCAN_HIST]; /* distinct windows per duplication bucket */
    uint64_t n_saturated;           /* distinct windows whose count hit 2^24 - 1 */
    uint64_t tok_checksum;          /* the dataset's tokenizer identity (0 = unknown) */
    uint64_t n_dup, n_dup_pos;      /* occurrence lists: windows and positions (from hist) */
    char ds_path[4096];
} ax_memscan_info;

/* The info as JSON (the INDEX.json sidecar: schema "axmem.memscan.index/1"); malloc'd, NULL
 * when out of memory. */
char *ax_memscan_info_json(const ax_memscan_info *in);

extern const char *const ax_memscan_hist_labels[AX_MEMSCAN_HIST]; /* "1", "2-3", ... */
int ax_memscan_hist_bucket(uint64_t count);

typedef struct {
    int n;                  /* window length in tokens (1..AX_MEMSCAN_N_MAX; default 32) */
    uint64_t round_windows; /* window starts each rank hashes per exchange round (2^20) */
    uint64_t seed;          /* XXH3 seed (0) */
    int hash_bits;          /* 64; fewer keep the low bits of each hash, so distinct windows
                             * collide (tests; `memscan index --hash-bits`). The index records
                             * it and lookups use its value. */
    int progress;           /* tokens/s and ETA on rank 0 (stderr) */
    volatile int *stop;     /* polled every round; nonzero -> AX_ERR_INTERRUPTED everywhere */
    uint64_t mem_limit;     /* bytes per rank a save on several ranks may use (0: half the RAM) */
    int messages_only;      /* ranks on one host exchange pairs as MPI messages, not through shared
                               memory (tests of the path ranks on several hosts take) */
} ax_memscan_build_opts;

void ax_memscan_build_opts_default(ax_memscan_build_opts *o);

/* Builds the index of ds. Collective over the MPI world when MPI is active (every rank opens
 * the same dataset; each ends up holding its shard, and the same global info); serial
 * otherwise. */
ax_status ax_memscan_index_build(const ax_axd_t *ds, const ax_memscan_build_opts *o,
                                 ax_memscan_index_t **out);
/* Builds the index of ds and writes it to path (version 3, and path.json) holding about
 * mem_limit bytes of memory (plus the dataset pages the kernel keeps mapped): windows are
 * hashed once and spilled to path.spill in hash partitions, each partition is counted alone
 * and the lists merged (index/index_spill.c). Collective over the MPI world when it has more
 * than one rank (mem_limit per rank): windows are routed to their owners as in
 * ax_memscan_index_build, each owner spills and counts its own, and rank 0 gathers the
 * partitions one at a time and writes the file (info_out on every rank). Temporary files next
 * to path (path.rR.* per rank under MPI) take ~16 bytes per window plus the index's size. The
 * file is the same, byte for byte, as ax_memscan_index_build + ax_memscan_index_save write
 * on as many ranks. */
ax_status ax_memscan_index_build_bounded(const ax_axd_t *ds, const ax_memscan_build_opts *o,
                                         uint64_t mem_limit, const char *path,
                                         ax_memscan_info *info_out);
/* Rewrites a version-2 index file as version 3 at path (and path.json) in about mem_limit
 * bytes, without the dataset (the same bytes a version-3 save of that index writes). Rank 0
 * uses it after a distributed save; also an upgrade path for existing files. Checks every
 * version-2 checksum on the way; the input is left as it is. */
ax_status ax_memscan_index_upgrade(const char *v2_path, const char *path, uint64_t mem_limit,
                                   volatile int *stop);
/* Windows of n tokens in ds (inside documents): what a build counts. */
uint64_t ax_memscan_windows_of(const ax_axd_t *ds, int n);
/* Bytes per window an in-memory build and save can take at most (table, lists, save order). */
#define AX_MEMSCAN_BYTES_PER_WINDOW 48

/* Writes the index to path (via path.partial + fsync + rename) and path.json. Collective:
 * rank 0 writes while the other ranks stream their shards to it block by block. `stop`
 * (may be NULL) is polled between blocks; on Ctrl-C no output file is left. */
ax_status ax_memscan_index_save(const ax_memscan_index_t *idx, const char *path,
                                volatile int *stop);
/* Opens a saved index for lookups in this process (any number of ranks may have built it) and
 * checks that it was built from ds (a mismatch names both files). Version 3 is read in place
 * (mmap; nothing is built), version 2 is loaded into memory. _load checks every checksum and
 * the file's structure now (one sequential pass over a v3 file); _open checks the header, the
 * section table and the directory now and every other 64 KiB page on first touch (milliseconds
 * for any size: for one-shot lookups), so damage found later makes the lookups needing it
 * answer "absent" and is reported by ax_memscan_index_check. */
ax_status ax_memscan_index_load(const char *path, const ax_axd_t *ds, ax_memscan_index_t **out);
ax_status ax_memscan_index_open(const char *path, const ax_axd_t *ds, ax_memscan_index_t **out);
/* Process-wide counts of how indexes came to be in this process, so tests can prove that a
 * scan read its index in place (in_place rises, built and in_memory do not). */
typedef struct {
    uint64_t in_place;  /* version-3 files mapped: nothing built (_open and _load) */
    uint64_t verified;  /* of those, every page hashed at open (_load) */
    uint64_t in_memory; /* version-2 files loaded into an in-memory table */
    uint64_t built;     /* tables built from a dataset (ax_memscan_index_build) */
} ax_memscan_open_counts;
void ax_memscan_open_counts_get(ax_memscan_open_counts *out);

/* AX_OK, or AX_ERR_CORRUPT naming the file and the damage a lookup has met (opened v3). */
ax_status ax_memscan_index_check(const ax_memscan_index_t *idx);
/* How many lookups of this handle have met damage so far, counting every one (0 for an index
 * checked whole: loaded or built). A query whose lookups raised it has an incomplete answer
 * (damaged windows read as absent): compare before and after it, and fail it. */
uint64_t ax_memscan_index_damage_met(const ax_memscan_index_t *idx);
/* Writes the previous format, version 2 (a whole index built in this process only): for tests
 * of the version-2 reader and for older readers. */
ax_status ax_memscan_index_save_v2(const ax_memscan_index_t *idx, const char *path,
                                   volatile int *stop);
/* Header only (no dataset needed); verify_blocks = 1 also decompresses and checks every block. */
ax_status ax_memscan_index_read_info(const char *path, int verify_blocks, ax_memscan_info *info);
void ax_memscan_index_free(ax_memscan_index_t *idx);
/* Traffic of the build and save so far (lib/dist/comm.h statistics of the world grid they
 * communicate over; alltoall = the pair exchange, send = shards streamed to rank 0). Zero for a
 * loaded index or a serial build. */
void ax_memscan_index_comm_stats(const ax_memscan_index_t *idx, ax_comm_stats *out);

const ax_memscan_info *ax_memscan_index_info(const ax_memscan_index_t *idx);
const ax_axd_t *ax_memscan_index_dataset(const ax_memscan_index_t *idx);
/* Bytes of this process's table, and its entries (its shard after a distributed build). */
size_t ax_memscan_index_table_bytes(const ax_memscan_index_t *idx);
/* Bytes of this process's occurrence lists, and summed over the ranks that hold the index. */
size_t ax_memscan_index_occ_bytes(const ax_memscan_index_t *idx);
uint64_t ax_memscan_index_occ_bytes_all(const ax_memscan_index_t *idx);
uint64_t ax_memscan_index_local_entries(const ax_memscan_index_t *idx);
/* After a distributed build a handle holds one shard: the rank owning this window. 0 for a
 * loaded index (it holds everything). */
int ax_memscan_index_owner(const ax_memscan_index_t *idx, const int32_t *window);
int ax_memscan_index_shard(const ax_memscan_index_t *idx); /* this handle's rank (0 if loaded) */
/* Table bytes summed over the ranks that hold the index (this process's alone if loaded). */
uint64_t ax_memscan_index_table_bytes_all(const ax_memscan_index_t *idx);

/* Is this window of n tokens in the training data? 1 and its count and first occurrence
 * (global token position) if so, else 0. Verified against the dataset's tokens. */
int ax_memscan_index_lookup(const ax_memscan_index_t *idx, const int32_t *window, uint32_t *count,
                            uint64_t *first_pos);
/* Every window of tokens[0..len): counts[i] (0 = absent) and first[i] for the window starting
 * at i, for i < len - n + 1 (nothing when len < n). Prefetches, so faster than one by one. */
void ax_memscan_index_lookup_all(const ax_memscan_index_t *idx, const int32_t *tokens, size_t len,
                                 uint32_t *counts, uint64_t *first);
/* Every occurrence of the window a lookup found at (first, count): returns how many (exact,
 * never capped, unlike count) and sets *list to them ascending; *list = NULL when the window
 * occurs once (at first). For this handle's windows only, after a distributed build. */
uint64_t ax_memscan_index_occurrences(const ax_memscan_index_t *idx, uint64_t first, uint32_t count,
                                      const uint64_t **list);
/* The occurrence lists as groups, one per window occurring more than once, in ascending order
 * of first occurrence: those this handle holds (after a build on several ranks, the windows this
 * rank owns; everything for a serial build or an opened file). Group g's positions are
 * ascending, the first being the window's first occurrence; returns how many (>= 2), or 0 when
 * the pages holding it are damaged (ax_memscan_index_check then says so). */
uint64_t ax_memscan_index_groups(const ax_memscan_index_t *idx);
uint64_t ax_memscan_index_group(const ax_memscan_index_t *idx, uint64_t g, const uint64_t **list);

/* Serving one saved index from R ranks (index/index_route.c): the rank of R that answers
 * this window (its tag's share of the hash range, a run of whole version-3 partitions). */
int ax_memscan_index_server(const ax_memscan_index_t *idx, const int32_t *window, int ranks);
/* Collective over the MPI world (serial without MPI): every rank opened the same index and
 * passes its own k windows of n tokens (windows[k * n]; k may differ between ranks, and be 0);
 * each window is looked up by its server rank and counts[i], first[i] come back as
 * ax_memscan_index_lookup would give them, in this rank's order. Rounds of 64K windows.
 * damaged[i] (when not NULL) = 1 where the server met damage answering window i (its answer
 * reads "absent" and is not to be trusted); without it, damage shows only in
 * ax_memscan_index_check on the server rank. */
ax_status ax_memscan_index_lookup_routed(const ax_memscan_index_t *idx, const int32_t *windows,
                                         size_t k, uint32_t *counts, uint64_t *first,
                                         uint8_t *damaged);

#define AX_MEMSCAN_MAX_SOURCES 8 /* default --max-sources */

/* One place a span occurs: global position, document, offset in the document. */
typedef struct {
    uint64_t pos, doc, doc_off;
} ax_memscan_source;

/* A maximal verbatim span: tokens[start, start + len) occur contiguously in the training data
 * (inside one document), and neither tokens[start - 1, start + len) nor tokens[start,
 * start + len + 1) do. pos/doc/doc_off: its first occurrence. occurrences/docs: how many
 * places and distinct documents hold the whole span; sources: the first min(docs,
 * max_sources) of those documents (each at its first occurrence of the span, in position
 * order). count_min/max: exact occurrences of its n-token windows. */
typedef struct {
    size_t start, len;
    uint64_t pos, doc, doc_off;
    uint64_t occurrences, docs;
    uint64_t count_min, count_max;
    size_t n_sources;
    const ax_memscan_source *sources; /* inside the *spans allocation */
    /* every place holding the whole span, in position order: the first min(occurrences,
     * max_occ) of them (ax_memscan_find_spans_occ; none from ax_memscan_find_spans) */
    size_t n_occ;
    const ax_memscan_source *occ; /* inside the *spans allocation */
} ax_memscan_span;

/* Every maximal verbatim span of >= n tokens of tokens[0..len), longest first (ties: earlier
 * start first). Exact: each span is extended against every occurrence of its windows (the
 * longest span is the longest substring of tokens found in one training document), and every
 * matching window lies in some span. Time: linear in the total occurrences of the matching
 * windows. *spans is one malloc'd block, sources included (free(*spans)); NULL when none. */
ax_status ax_memscan_find_spans(const ax_memscan_index_t *idx, const int32_t *tokens, size_t len,
                                size_t max_sources, ax_memscan_span **spans, size_t *n_spans);
/* The same, also listing up to max_occ places of each span (its occ; 0 = none): every
 * document and offset where the whole span occurs, from the occurrence lists (the count of
 * them all is its `occurrences`). */
ax_status ax_memscan_find_spans_occ(const ax_memscan_index_t *idx, const int32_t *tokens,
                                    size_t len, size_t max_sources, uint64_t max_occ,
                                    ax_memscan_span **spans, size_t *n_spans);
/* The same from window lookups already made (counts[i], first[i] for the window at i, as
 * ax_memscan_index_lookup_all gives them; e.g. by ax_memscan_index_lookup_routed). */
ax_status ax_memscan_find_spans_given(const ax_memscan_index_t *idx, const int32_t *tokens,
                                      size_t len, const uint32_t *counts, const uint64_t *first,
                                      size_t max_sources, uint64_t max_occ, ax_memscan_span **spans,
                                      size_t *n_spans);
/* The places of the window a lookup found at (first, count > 0) as documents and offsets: the
 * first min(total, max) in ascending position order into out; returns the total (exact, never
 * capped, unlike count). */
uint64_t ax_memscan_window_sources(const ax_memscan_index_t *idx, uint64_t first, uint32_t count,
                                   ax_memscan_source *out, size_t max);
