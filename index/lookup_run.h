/* `axmem memscan lookup` as a library call: an index opened in place against its dataset (and
 * tokenizer), a passage's maximal verbatim spans and matching windows, its JSON answer, and a
 * batch of JSON queries answered one line each (under mpirun the ranks split the queries and
 * serve the index's hash ranges). The command (index/cmd_lookup.c) parses the flags and prints
 * a passage's answer as text. */
#pragma once
#include <stdio.h>

#include "data/tokenizer.h"
#include "index/index.h"
#include "lib/core/json.h"

typedef struct {
    size_t max_sources; /* documents listed per span (all are counted); set before opening */
    uint64_t max_occ;   /* places listed per span and window (--occurrences; 0: none) */
    const char *index;  /* the index's path, for messages */
    ax_memscan_info info;
    ax_axd_t *ds;
    ax_tokenizer_t *tok; /* NULL without one: batch queries then give token ids */
    ax_memscan_index_t *idx;
} ax_lookup;

/* Opens `index` in place against `data` (NULL: the dataset path it stores) and, with tok_path,
 * the tokenizer, checked against both. Close with ax_lookup_close (after a failure too). */
ax_status ax_lookup_open(ax_lookup *L, const char *index, const char *data, const char *tok_path);
void ax_lookup_close(ax_lookup *L);

/* One passage's answer: its tokens [len], maximal spans [ns] (longest first), and per window
 * [W] its count (0: absent) and first occurrence. */
typedef struct {
    int32_t *t;
    size_t len;
    ax_memscan_span *sp;
    size_t ns;
    uint32_t *cnt;
    uint64_t *first;
    size_t W;
} ax_lookup_answer;
ax_status ax_lookup_passage(const ax_lookup *L, const char *text, size_t n, ax_lookup_answer *a);
void ax_lookup_answer_free(ax_lookup_answer *a);
/* The answer as one JSON object (what --json prints). */
ax_status ax_lookup_answer_json(const ax_lookup *L, const ax_lookup_answer *a, ax_jw *w);

/* The first min(total, max_occ) places of the window found at (first, count), into b->v
 * (grown as needed; free(b->v) after): *listed of them, *total in all. */
typedef struct {
    ax_memscan_source *v;
    size_t cap;
} ax_lookup_places;
ax_status ax_lookup_window_places(const ax_lookup *L, uint64_t first, uint32_t count,
                                  ax_lookup_places *b, size_t *listed, uint64_t *total);

/* The error of a query whose lookups met a damaged index page (its windows there read as
 * absent, so any answer would undercount): it gets no answer. */
ax_status ax_lookup_damaged(const ax_lookup *L);

/* --file QUERIES.jsonl: one answer line on stdout per query line (blank lines skipped), an
 * error object {"line": N, "error": "..."} for a bad one (a query that met a damaged index page
 * too). *n_failed of *n_queries failed. Collective under MPI: rank r answers the r-th block of
 * queries, its windows looked up by the ranks serving their hash ranges, and rank 0 prints
 * every answer in query order. */
ax_status ax_lookup_batch(const ax_lookup *L, const char *file, uint64_t *n_failed,
                          uint64_t *n_queries);
