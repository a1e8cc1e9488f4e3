/* UTF-8 as Unicode defines it well-formed (Table 3-7): no overlong forms, surrogates or code
 * points past U+10FFFF. Inline: the tokenizers decode every character of a corpus with these.
 * The JSON writer (json.h) and the corpus text check (data/input.c) judge bytes with them. */
#pragma once
#include <stddef.h>
#include <stdint.h>

/* The continuation bytes that lead byte c needs (0 for ASCII), and the range [*lo, *hi] its
 * first continuation byte must fall in (later ones: 0x80..0xBF); -1 when c never starts a
 * character (a continuation byte, C0, C1, F5..FF). */
static inline int ax_utf8_lead(uint8_t c, uint8_t *lo, uint8_t *hi) {
    *lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80; /* overlong forms */
    *hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF; /* surrogates, past U+10FFFF */
    return c < 0x80 ? 0 : c < 0xC2 ? -1 : c < 0xE0 ? 1 : c < 0xF0 ? 2 : c < 0xF5 ? 3 : -1;
}

/* 1 if s[0..n) starts with a well-formed character, its byte length in *len; else 0 and
 * *len = the bytes of the maximal ill-formed subpart (>= 1) that one U+FFFD replaces. n >= 1. */
static inline int ax_utf8_next(const char *s, size_t n, size_t *len) {
    const uint8_t *u = (const uint8_t *)s;
    if (u[0] < 0x80) { /* ASCII: the common case, kept off the table */
        *len = 1;
        return 1;
    }
    uint8_t lo, hi;
    int need = ax_utf8_lead(u[0], &lo, &hi);
    if (need < 0) {
        *len = 1;
        return 0;
    }
    for (int i = 1; i <= need; i++) {
        if ((size_t)i >= n || u[i] < lo || u[i] > hi) { /* s[0..i) is the maximal subpart */
            *len = (size_t)i;
            return 0;
        }
        lo = 0x80, hi = 0xBF;
    }
    *len = (size_t)need + 1;
    return 1;
}

/* The length of the well-formed character at s[0..n) (n >= 1) and its code point in *cp; 0
 * when it is ill-formed. */
static inline size_t ax_utf8_decode(const uint8_t *s, size_t n, uint32_t *cp) {
    if (s[0] < 0x80) {
        *cp = s[0];
        return 1;
    }
    size_t len;
    if (!ax_utf8_next((const char *)s, n, &len)) return 0;
    uint32_t v = s[0] & (0x7Fu >> len); /* the lead byte's payload bits */
    for (size_t k = 1; k < len; k++) v = v << 6 | (s[k] & 0x3Fu);
    *cp = v;
    return len;
}

/* Writes code point cp (< 0x110000) to o as UTF-8; returns its length (1 to 4). */
static inline size_t ax_utf8_put(uint8_t *o, uint32_t cp) {
    if (cp < 0x80) {
        o[0] = (uint8_t)cp;
        return 1;
    }
    static const uint8_t lead[5] = {0, 0, 0xC0, 0xE0, 0xF0};
    size_t len = cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    for (size_t k = len - 1; k > 0; k--, cp >>= 6) o[k] = (uint8_t)(0x80 | (cp & 0x3F));
    o[0] = (uint8_t)(lead[len] | cp);
    return len;
}
