/* Hand-compiled GPT-2 and Llama-3 pre-tokenizer regexes over UTF-8 (see hf_pretok.h). */
#include "data/hf/hf_pretok.h"
#include "lib/core/utf8.h"

const char ax_hf_re_gpt2[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
const char ax_hf_re_llama3[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

const char ax_hf_re_qwen2[] = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
                              "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

int ax_hf_ucls(uint32_t cp) {
    if (cp < 0x80) { /* fast path */
        if ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z') return 1;
        return cp >= '0' && cp <= '9' ? 2 : 0;
    }
    unsigned lo = 0, hi = ax_hf_n_uranges;
    while (lo < hi) {
        unsigned mid = (lo + hi) / 2;
        if (cp < ax_hf_uranges[mid].lo)
            hi = mid;
        else if (cp > ax_hf_uranges[mid].hi)
            lo = mid + 1;
        else
            return ax_hf_uranges[mid].cls;
    }
    return 0;
}

int ax_hf_uspace(uint32_t cp) {
    return (cp >= 9 && cp <= 13) || cp == 32 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
           cp == 0x205F || cp == 0x3000;
}

/* character classes the regexes test */
enum { C_OTHER, C_LETTER, C_NUMBER, C_SPACE };

/* Decodes the character at p[i] (i < n): its byte length, class and code point (cp is
 * UINT32_MAX for an ill-formed byte, which is one character of class other). */
static size_t chr_at(const uint8_t *p, size_t n, size_t i, int *cls, uint32_t *cpo) {
    size_t len = ax_utf8_decode(p + i, n - i, cpo);
    if (!len) {
        *cpo = UINT32_MAX;
        *cls = C_OTHER;
        return 1;
    }
    *cls = ax_hf_uspace(*cpo) ? C_SPACE : ax_hf_ucls(*cpo);
    return len;
}

static inline int cls_at(const uint8_t *p, size_t n, size_t i, size_t *len) {
    int c;
    uint32_t cp;
    *len = chr_at(p, n, i, &c, &cp);
    return c;
}

/* end of the run of class `cls` starting at j */
static size_t run(const uint8_t *p, size_t n, size_t j, int cls) {
    size_t l;
    while (j < n && cls_at(p, n, j, &l) == cls) j += l;
    return j;
}

/* \s+(?!\S) then \s+, at a space character i: the run, less its last character when a
 * non-space follows and the run has two or more characters */
static size_t space_tail(const uint8_t *p, size_t n, size_t i) {
    size_t j = i, last = i, l;
    while (j < n && cls_at(p, n, j, &l) == C_SPACE) {
        last = j;
        j += l;
    }
    if (j < n && last > i) return last;
    return j;
}

static inline int lower_ascii(uint8_t c) {
    return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

/* 's 't 're 've 'm 'll 'd after an apostrophe at i; `fold` compares ASCII case-insensitively
 * (and lets U+017F LATIN SMALL LETTER LONG S, which case-folds to s, stand for s) */
static size_t contraction(const uint8_t *p, size_t n, size_t i, int fold) {
    if (i + 1 >= n) return 0;
    int c = fold ? lower_ascii(p[i + 1]) : p[i + 1];
    if (c == 's' || c == 't' || c == 'm' || c == 'd') return i + 2;
    if (fold && i + 2 < n && p[i + 1] == 0xC5 && p[i + 2] == 0xBF) return i + 3;
    if (i + 2 >= n) return 0;
    int d = fold ? lower_ascii(p[i + 2]) : p[i + 2];
    if ((c == 'r' && d == 'e') || (c == 'v' && d == 'e') || (c == 'l' && d == 'l')) return i + 3;
    return 0;
}

size_t ax_hf_match_gpt2(const uint8_t *p, size_t n, size_t i) {
    if (p[i] == '\'') {
        size_t e = contraction(p, n, i, 0);
        if (e) return e;
    }
    size_t l, j = i;
    int c = cls_at(p, n, i, &l);
    if (p[i] == ' ' && i + 1 < n) {
        size_t l2;
        int c2 = cls_at(p, n, i + 1, &l2);
        if (c2 != C_SPACE) return run(p, n, i + 1, c2); /* ' ?X+' for X = L, N, other */
    }
    if (c != C_SPACE) return run(p, n, j, c);
    return space_tail(p, n, i);
}

static inline int is_crlf(uint8_t b) {
    return b == '\r' || b == '\n';
}

size_t ax_hf_match_llama3(const uint8_t *p, size_t n, size_t i, int max_digits) {
    if (p[i] == '\'') {
        size_t e = contraction(p, n, i, 1);
        if (e) return e;
    }
    size_t l;
    int c = cls_at(p, n, i, &l);
    /* [^\r\n\p{L}\p{N}]?\p{L}+ */
    if (c == C_LETTER) return run(p, n, i, C_LETTER);
    if (c != C_NUMBER && !is_crlf(p[i]) && i + l < n) {
        size_t l2;
        if (cls_at(p, n, i + l, &l2) == C_LETTER) return run(p, n, i + l, C_LETTER);
    }
    /* \p{N}{1,3} */
    if (c == C_NUMBER) {
        size_t j = i + l;
        for (int k = 1; k < max_digits && j < n && cls_at(p, n, j, &l) == C_NUMBER; k++) j += l;
        return j;
    }
    /* ' ?[^\s\p{L}\p{N}]+[\r\n]*' */
    size_t j = i;
    if (p[i] == ' ' && i + 1 < n && cls_at(p, n, i + 1, &l) == C_OTHER) j = i + 1;
    if (cls_at(p, n, j, &l) == C_OTHER) {
        j = run(p, n, j, C_OTHER);
        while (j < n && is_crlf(p[j])) j++;
        return j;
    }
    /* here p[i] is a space character: \s*[\r\n]+ ends after the run's last CR/LF */
    size_t e = i, after_crlf = 0;
    while (e < n && cls_at(p, n, e, &l) == C_SPACE) {
        if (is_crlf(p[e])) after_crlf = e + 1;
        e += l;
    }
    if (after_crlf) return after_crlf;
    return space_tail(p, n, i);
}
