/* Deterministic sample loader. The dataset's token stream is cut into windows of seq_len+1
 * tokens starting at multiples of seq_len (inputs = window[0..T), targets = window[1..T]).
 * Global sample g (= step * global_batch + j) comes from epoch e = g / n_windows at
 * position perm_e(g mod n_windows), where perm_e is a seeded bijection of [0, n_windows)
 * (cycle-walking Feistel: random access, no stored permutation). So the data order depends
 * only on the seed and the global sample index, never on ranks or threads. */
#pragma once
#include <stdint.h>
#include "data/axd.h"
#include "lib/core/status.h"

typedef struct ax_loader ax_loader_t;

/* AX_ERR_ARG naming the dataset and sizes if it holds fewer than seq_len+1 tokens. */
ax_status ax_loader_create(const ax_axd_t *ds, int seq_len, uint64_t seed, ax_loader_t **out);
/* Document-aligned samples: sample g is document perm_e(g mod n_docs): end-of-text (which
 * precedes every document in the stream, so a model learns how documents start), then the
 * document's first seq_len tokens, padded when shorter (the padding is not a target: see
 * ax_loader_sample_len). doc_pos is 0 for the end-of-text and then 0, 1, 2, ... Every document
 * starts at the same position of its sequence, as in the goldfish paper's setup. */
ax_status ax_loader_create_docs(const ax_axd_t *ds, int seq_len, uint64_t seed, ax_loader_t **out);
void ax_loader_free(ax_loader_t *l);
uint64_t ax_loader_n_windows(const ax_loader_t *l);
/* tokens[seq_len+1]; doc_pos[seq_len+1] (may be NULL) = index of each token within its
 * document (0 = the document's first token); goldfish uses it to keep the first h targets. */
void ax_loader_sample(const ax_loader_t *l, uint64_t g, int32_t *tokens, uint32_t *doc_pos);
/* The same, returning how many of the seq_len+1 tokens are real (the rest are padding, id 0,
 * doc_pos continuing); always seq_len+1 for packed windows. */
int ax_loader_sample_len(const ax_loader_t *l, uint64_t g, int32_t *tokens, uint32_t *doc_pos);
/* token index in the dataset where sample g starts (for context before the window) */
uint64_t ax_loader_start(const ax_loader_t *l, uint64_t g);
/* the window index perm_e(g mod n) that sample g reads (for tests and provenance) */
uint64_t ax_loader_window(const ax_loader_t *l, uint64_t g);
