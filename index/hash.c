#include "index/hash.h"
#include "data/tokenizer.h"

#include <string.h>

/* The token array, read in place (data/axd.h: tokens follow the n_docs + 1 offsets, 2 bytes
 * each when the vocabulary fits in 16 bits, else 4): comparisons stop at the first difference
 * without copying, which matters when a hit is confirmed for every window of a scan. */
static const uint8_t *tokens_at(const ax_axd_t *ds, uint64_t pos, size_t *width) {
    *width = ax_axd_vocab_size(ds) <= 65536 ? 2 : 4;
    const uint8_t *tok = (const uint8_t *)(ax_axd_doc_offsets(ds) + ax_axd_n_docs(ds) + 1);
    return tok + *width * pos;
}

int ax_ms_window_eq_ds(const ax_axd_t *ds, uint64_t a, uint64_t b, int n) {
    size_t w;
    const uint8_t *x = tokens_at(ds, a, &w), *y = tokens_at(ds, b, &w);
    return memcmp(x, y, w * (size_t)n) == 0;
}

int ax_ms_window_eq_q(const ax_axd_t *ds, uint64_t a, const int32_t *q, int n) {
    size_t w;
    const uint8_t *x = tokens_at(ds, a, &w);
    if (w == 4) return memcmp(x, q, 4 * (size_t)n) == 0;
    for (int i = 0; i < n; i++) {
        uint16_t v;
        memcpy(&v, x + 2 * i, 2);
        if ((int32_t)v != q[i]) return 0;
    }
    return 1;
}

void ax_ms_prefetch_tokens(const ax_axd_t *ds, uint64_t pos, uint32_t n) {
    size_t w;
    const uint8_t *p = tokens_at(ds, pos, &w);
    __builtin_prefetch(p, 0, 1);
    __builtin_prefetch(p + w * n - 1, 0, 1); /* a window may straddle two lines */
}

uint64_t ax_ms_doc_text_end(const ax_axd_t *ds, uint64_t d) {
    const uint64_t *off = ax_axd_doc_offsets(ds);
    uint64_t end = off[d + 1];
    if (end > off[d] && ax_axd_token(ds, end - 1) == ax_axd_eot(ds)) end--;
    return end;
}
