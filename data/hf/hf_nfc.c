/* NFC over UTF-8 (see hf_nfc.h): decode, decompose fully (tables + Hangul arithmetic), sort
 * marks by combining class, compose (primary composites + Hangul), encode. */
#include "data/hf/hf_nfc.h"
#include "lib/core/utf8.h"

#include <stdlib.h>
#include <string.h>

#define S_BASE 0xAC00u
#define L_BASE 0x1100u
#define V_BASE 0x1161u
#define T_BASE 0x11A7u
#define L_COUNT 19u
#define V_COUNT 21u
#define T_COUNT 28u
#define N_COUNT (V_COUNT * T_COUNT)
#define S_COUNT (L_COUNT * N_COUNT)
#define RAW 0x80000000u /* an ill-formed byte, kept as is: RAW | byte */

int ax_hf_nfc_trivial(const uint8_t *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (s[i] >= 0xCC) return 0; /* lead byte of a code point >= U+0300 */
    return 1;
}

static int ccc_of(uint32_t cp) {
    if (cp < 0x300 || (cp & RAW)) return 0;
    unsigned lo = 0, hi = ax_hf_n_ccc;
    while (lo < hi) {
        unsigned m = (lo + hi) / 2;
        if (cp < ax_hf_ccc[m].lo)
            hi = m;
        else if (cp > ax_hf_ccc[m].hi)
            lo = m + 1;
        else
            return ax_hf_ccc[m].ccc;
    }
    return 0;
}

static const ax_hf_decomp *decomp_of(uint32_t cp) {
    unsigned lo = 0, hi = ax_hf_n_decomps;
    while (lo < hi) {
        unsigned m = (lo + hi) / 2;
        if (cp < ax_hf_decomps[m].cp)
            hi = m;
        else if (cp > ax_hf_decomps[m].cp)
            lo = m + 1;
        else
            return &ax_hf_decomps[m];
    }
    return NULL;
}

/* the composite of a + b, or 0 */
static uint32_t compose(uint32_t a, uint32_t b) {
    if (a >= L_BASE && a < L_BASE + L_COUNT && b >= V_BASE && b < V_BASE + V_COUNT)
        return S_BASE + ((a - L_BASE) * V_COUNT + (b - V_BASE)) * T_COUNT;
    if (a >= S_BASE && a < S_BASE + S_COUNT && (a - S_BASE) % T_COUNT == 0 && b > T_BASE &&
        b < T_BASE + T_COUNT)
        return a + (b - T_BASE);
    unsigned lo = 0, hi = ax_hf_n_comps;
    while (lo < hi) {
        unsigned m = (lo + hi) / 2;
        const ax_hf_comp *c = &ax_hf_comps[m];
        if (a < c->a || (a == c->a && b < c->b))
            hi = m;
        else if (a > c->a || b > c->b)
            lo = m + 1;
        else
            return c->c;
    }
    return 0;
}

/* appends the full canonical decomposition of cp to out (at most 4 code points, and at most
 * 1.5 per UTF-8 byte of the input, which sizes the caller's buffer) */
static size_t decompose(uint32_t cp, uint32_t *out, size_t o) {
    if (cp >= S_BASE && cp < S_BASE + S_COUNT) {
        uint32_t s = cp - S_BASE;
        out[o++] = L_BASE + s / N_COUNT;
        out[o++] = V_BASE + (s % N_COUNT) / T_COUNT;
        if (s % T_COUNT) out[o++] = T_BASE + s % T_COUNT;
        return o;
    }
    const ax_hf_decomp *d = cp < 0xC0 || (cp & RAW) ? NULL : decomp_of(cp);
    if (!d) {
        out[o++] = cp;
        return o;
    }
    o = decompose(d->a, out, o);
    if (d->b) o = decompose(d->b, out, o);
    return o;
}

int ax_hf_nfc(const uint8_t *s, size_t n, uint8_t **out, size_t *n_out) {
    *out = NULL;
    *n_out = 0;
    /* canonical decompositions give at most 1.5 code points per input byte (checked by the
     * table generator's data: e.g. U+0344, 2 bytes -> 2; U+1F82, 3 bytes -> 4) */
    uint32_t *cp = malloc((2 * n + 4) * sizeof *cp);
    if (!cp) return 0;
    size_t m = 0;
    for (size_t i = 0; i < n;) {
        uint32_t c;
        size_t len = ax_utf8_decode(s + i, n - i, &c);
        if (!len) { /* an ill-formed byte passes through as it is */
            c = RAW | s[i];
            len = 1;
        }
        m = decompose(c, cp, m);
        i += len;
    }
    /* canonical ordering: a stable insertion sort of each run of marks by class */
    for (size_t i = 1; i < m; i++) {
        int ci = ccc_of(cp[i]);
        if (!ci) continue;
        uint32_t x = cp[i];
        size_t j = i;
        while (j > 0) {
            int cj = ccc_of(cp[j - 1]);
            if (cj <= ci) break;
            cp[j] = cp[j - 1];
            j--;
        }
        cp[j] = x;
    }
    /* canonical composition */
    size_t o = 0, starter = SIZE_MAX;
    int last = 0;
    for (size_t i = 0; i < m; i++) {
        uint32_t c = cp[i];
        int cc = ccc_of(c);
        if (starter != SIZE_MAX && !(cp[starter] & RAW) && !(c & RAW) &&
            (o - 1 == starter || (cc != 0 && last < cc))) {
            uint32_t k = compose(cp[starter], c);
            if (k) {
                cp[starter] = k;
                continue;
            }
        }
        if (cc == 0) {
            starter = o;
            last = 0;
        } else {
            last = cc;
        }
        cp[o++] = c;
    }
    uint8_t *b = malloc(4 * o + 1);
    if (!b) {
        free(cp);
        return 0;
    }
    size_t bl = 0;
    for (size_t i = 0; i < o; i++)
        if (cp[i] & RAW)
            b[bl++] = (uint8_t)cp[i];
        else
            bl += ax_utf8_put(b + bl, cp[i]);
    free(cp);
    *out = b;
    *n_out = bl;
    return 1;
}
