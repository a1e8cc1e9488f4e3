#include "data/pretok.h"

#define L AX_PT_LETTER
#define D AX_PT_DIGIT
#define S AX_PT_SPACE
#define O AX_PT_OTHER
/* Bytes >= 0x80 count as letters so multi-byte UTF-8 words are never split mid-character. */
const uint8_t ax_pretok_class[256] = {
    O, O, O, O, O, O, O, O, O, S, S, S, S, S, O, O, /* 0x00: \t \n \v \f \r */
    O, O, O, O, O, O, O, O, O, O, O, O, O, O, O, O, /* 0x10 */
    S, O, O, O, O, O, O, O, O, O, O, O, O, O, O, O, /* 0x20: space */
    D, D, D, D, D, D, D, D, D, D, O, O, O, O, O, O, /* 0x30: digits */
    O, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, /* 0x40 */
    L, L, L, L, L, L, L, L, L, L, L, O, O, O, O, O, /* 0x50 */
    O, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, /* 0x60 */
    L, L, L, L, L, L, L, L, L, L, L, O, O, O, O, O, /* 0x70 */
    L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L,
    L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L,
    L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L,
    L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L,
};
#undef L
#undef D
#undef S
#undef O

static inline size_t run_of(const uint8_t *p, size_t n, size_t j, uint8_t cls) {
    while (j < n && ax_pretok_class[p[j]] == cls) j++;
    return j;
}

/* Length of a contraction at p[i] == '\'' (0 if none); matches GPT-2's case-sensitive list. */
static inline size_t contraction(const uint8_t *p, size_t n, size_t i) {
    if (i + 1 >= n) return 0;
    uint8_t c = p[i + 1];
    if (c == 's' || c == 't' || c == 'm' || c == 'd') return 2;
    if (i + 2 >= n) return 0;
    uint8_t d = p[i + 2];
    if ((c == 'r' && d == 'e') || (c == 'v' && d == 'e') || (c == 'l' && d == 'l')) return 3;
    return 0;
}

size_t ax_pretok_next(const uint8_t *p, size_t n, size_t i) {
    uint8_t c = p[i];
    uint8_t cls = ax_pretok_class[c];
    if (c == '\'') {
        size_t k = contraction(p, n, i);
        if (k) return i + k;
    }
    if (cls != AX_PT_SPACE) return run_of(p, n, i + 1, cls);
    /* whitespace */
    if (c == ' ' && i + 1 < n && ax_pretok_class[p[i + 1]] != AX_PT_SPACE)
        return run_of(p, n, i + 2, ax_pretok_class[p[i + 1]]); /* " word" */
    size_t k = run_of(p, n, i + 1, AX_PT_SPACE);
    /* like \s+(?!\S): a run followed by a word leaves its last byte to the next chunk (a
     * space becomes the word's prefix; another whitespace byte is a chunk of its own) */
    if (k < n && k - i >= 2) return k - 1;
    return k;
}

int ax_pretok_safe_split(const uint8_t *p, size_t n, size_t k) {
    if (k == 0 || k >= n) return 1;
    uint8_t a = p[k - 1], b = p[k];
    uint8_t ca = ax_pretok_class[a], cb = ax_pretok_class[b];
    /* a run of a's class must end at k (class change), a must not be whitespace (the run
     * would give its last byte to the next word) nor an apostrophe (k may be inside 's) */
    return ca != AX_PT_SPACE && a != '\'' && ca != cb;
}

size_t ax_pretok_find_split(const uint8_t *p, size_t n, size_t from) {
    if (from == 0) from = 1;
    for (size_t k = from; k < n; k++)
        if (ax_pretok_safe_split(p, n, k)) return k;
    return n;
}
