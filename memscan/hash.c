#include "memscan/hash.h"
#include "data/tokenizer.h"

#include <string.h>

static int g_bits = 64;

void ax_memscan_set_hash_bits(int bits) {
    g_bits = bits < 1 ? 1 : bits > 64 ? 64 : bits;
}

int ax_memscan_hash_bits(void) {
    return g_bits;
}

/* compared in chunks so n may be large without a large stack buffer */
#define CHUNK 64

int ax_ms_window_eq_ds(const ax_axd_t *ds, uint64_t a, uint64_t b, int n) {
    int32_t x[CHUNK], y[CHUNK];
    for (int i = 0; i < n; i += CHUNK) {
        int k = n - i < CHUNK ? n - i : CHUNK;
        ax_axd_tokens(ds, a + (uint64_t)i, (uint64_t)k, x);
        ax_axd_tokens(ds, b + (uint64_t)i, (uint64_t)k, y);
        if (memcmp(x, y, 4 * (size_t)k) != 0) return 0;
    }
    return 1;
}

int ax_ms_window_eq_q(const ax_axd_t *ds, uint64_t a, const int32_t *q, int n) {
    int32_t x[CHUNK];
    for (int i = 0; i < n; i += CHUNK) {
        int k = n - i < CHUNK ? n - i : CHUNK;
        ax_axd_tokens(ds, a + (uint64_t)i, (uint64_t)k, x);
        if (memcmp(x, q + i, 4 * (size_t)k) != 0) return 0;
    }
    return 1;
}

uint64_t ax_ms_doc_text_end(const ax_axd_t *ds, uint64_t d) {
    const uint64_t *off = ax_axd_doc_offsets(ds);
    uint64_t end = off[d + 1];
    if (end > off[d] && ax_axd_token(ds, end - 1) == AX_TOK_EOT) end--;
    return end;
}
