/* Corpus input: a stream of documents from text and JSONL files, read piece by piece so no
 * more than one piece (a line, or a block of a big text file) is in memory at a time.
 *   *.jsonl  one JSON object per line; the document is its "text" string; blank lines skipped
 *   other    the whole file is one document, or with split_lines each non-empty line
 *   *.zst, *.gz  decompressed as they are read (zstd / gzip streaming: the Pile's *.jsonl.zst),
 *            then treated by the rest of the name as above; concatenated frames or members are
 *            one stream. A truncated or corrupt stream is an error naming the file and the
 *            compressed byte offset.
 * A document bigger than a block comes in several pieces cut at safe chunk boundaries
 * (data/pretok.h), so encoding the pieces gives exactly the tokens of the whole. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "lib/core/status.h"

typedef struct ax_input ax_input_t;

/* Checks every path up front (exists, regular file, readable) so long work fails early. */
ax_status ax_input_open(const char *const *paths, int n_paths, int split_lines, ax_input_t **out);
/* Next piece; valid until the next call. *doc_end = 1 when it ends a document (a document
 * may be empty: n == 0, doc_end = 1). At the end: *eof = 1, n = 0. Errors name file:line. */
ax_status ax_input_next(ax_input_t *in, const uint8_t **p, size_t *n, int *doc_end, int *eof);
uint64_t ax_input_bytes_read(const ax_input_t *in);  /* file bytes (compressed) read so far */
uint64_t ax_input_bytes_total(const ax_input_t *in); /* sum of the file sizes */
void ax_input_free(ax_input_t *in);
