/* `axmem data dedup` as a library call: exact-substring deduplication of a dataset (Lee et al.
 * 2022) on the corpus index, and the removal of exact duplicate documents.
 *
 * Definition. Windows lie inside one document's text (never across a document boundary, never
 * over its end-of-text). The window of n tokens at position p is a repeat when the same n
 * tokens occur at an earlier position (corpus order: document order, then offset); a token is
 * removed iff it lies in some repeat window. So the first occurrence of every repeated span
 * survives and every later copy of a span of >= n tokens is removed. A document whose whole
 * text is removed is dropped (one that was empty to begin with stays). With `documents`, a
 * document identical (all its tokens) to an earlier one is dropped, before and independently of
 * the span rule (which it does not change: every window of such a document occurs earlier).
 *
 * How. The index (index/index.h) is built in memory, or spilling hash partitions to disk when a
 * rank's share of the windows needs more than mem_limit (then read in place from a temporary
 * file next to `out`). Its occurrence lists are exact (hits confirmed against the tokens, so
 * hash collisions never merge windows): every position of a list but the first starts a repeat
 * window. The positions are marked chunk by chunk (4 bytes a token of a chunk, a chunk at most
 * an eighth of mem_limit): 1 for a repeat start, c >= 2 at the first occurrence of a window
 * occurring c times; each rank marks from the lists it holds (its own windows after a build on
 * several ranks, an equal share of an opened file's), the marks are summed over the ranks (no
 * position is marked by two), and rank 0 writes the kept tokens of the chunk. Documents are
 * hashed (XXH3 of all their tokens, split over the ranks) and equal hashes confirmed by
 * comparing tokens: 24 bytes a document on rank 0. The output is the same, byte for byte, on
 * any number of ranks and with or without spilling. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "lib/core/status.h"

#define AX_DEDUP_TOP_MAX 100 /* spans the summary can list */
#define AX_DEDUP_TOP_DEFAULT 20

typedef struct {
    const char *input;      /* dataset (.axd) */
    const char *out;        /* dataset to write (never the input) */
    const char *summary;    /* JSON summary (NULL or "": out + ".dedup.json") */
    const char *tokenizer;  /* decodes the spans' text in the summary (NULL: token ids) */
    int n;                  /* window length (1..AX_MEMSCAN_N_MAX); 0: keep repeated spans */
    int documents;          /* drop documents identical to an earlier one */
    uint64_t mem_limit;     /* bytes per rank for the index (0: half the machine's memory) */
    int hash_bits;          /* 64; fewer force hash collisions (tests: the result stays exact) */
    uint64_t seed;          /* hash seed */
    uint64_t round_windows; /* windows a rank hashes per exchange round (0: the index's default) */
    int top;                /* spans the summary lists (0..AX_DEDUP_TOP_MAX) */
    uint64_t chunk_tokens;  /* positions marked per round (0: from mem_limit; tests set few) */
    int progress;           /* progress lines on rank 0 (stderr) */
    volatile int *stop;     /* nonzero -> AX_ERR_INTERRUPTED on every rank, no output */
} ax_dedup_opts;

void ax_dedup_opts_default(ax_dedup_opts *o);

/* A repeated span: tokens [first, first + len) (document doc, from offset), each of whose
 * len - n + 1 windows occurs `count` times and first here; maximal (the windows just before and
 * after are not first occurrences of windows occurring as often). */
#define AX_DEDUP_PREVIEW 72 /* bytes of a span's text (or ids) for a one-line listing */
typedef struct {
    uint64_t count, first, len, doc, offset;
    char preview[AX_DEDUP_PREVIEW]; /* one line, cut at a character; filled on rank 0 */
} ax_dedup_span;

typedef struct {
    uint64_t tokens_before, tokens_after;
    uint64_t docs_before, docs_after;
    uint64_t span_tokens;    /* text tokens removed inside repeat windows */
    uint64_t dup_docs;       /* documents dropped as identical to an earlier one */
    uint64_t dup_doc_tokens; /* their tokens */
    uint64_t emptied_docs;   /* documents dropped because their whole text was removed */
    uint64_t windows, distinct, repeated; /* index: windows, distinct, distinct seen 2+ times */
    int ranks, spilled;
    double index_s, total_s;
    size_t n_spans;
    ax_dedup_span spans[AX_DEDUP_TOP_MAX]; /* most duplicated first (count, then length) */
    char summary[4200];                    /* the summary's path */
} ax_dedup_result;

/* Collective over the MPI world (serial without MPI); rank 0 writes out and the summary. */
ax_status ax_dedup_run(const ax_dedup_opts *o, ax_dedup_result *r);
