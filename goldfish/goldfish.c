#include "goldfish/goldfish.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Inlined XXH3: the mask runs on every training token, and a call into the shared library per
 * 52-byte window costs about as much as the hash itself. Same algorithm, same values. */
#define XXH_INLINE_ALL
#include <xxhash.h>

#define GRAMMAR                                                                                    \
    "valid: none | static:k=K | hash:k=K,h=H[,seed=S] (defaults k=4, h=13, seed=0; K in "          \
    "2..65536, H in 1..1024, S a decimal or 0x-hex u64)"

static ax_status spec_err(const char *spec, const char *what, const char *detail) {
    return ax_errorf(AX_ERR_ARG, "--goldfish '%.200s': %s%.100s; " GRAMMAR, spec, what, detail);
}

/* all digits, no sign or spaces, value in [lo, hi] */
static int parse_dec(const char *s, size_t n, uint64_t lo, uint64_t hi, uint64_t *out) {
    if (n == 0 || n > 20) return 0;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return 0;
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10) return 0;
        v = v * 10 + d;
    }
    if (v < lo || v > hi) return 0;
    *out = v;
    return 1;
}

static int parse_seed(const char *s, size_t n, uint64_t *out) {
    if (n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        if (n - 2 > 16) return 0;
        uint64_t v = 0;
        for (size_t i = 2; i < n; i++) {
            char c = s[i];
            unsigned d;
            if (c >= '0' && c <= '9')
                d = (unsigned)(c - '0');
            else if (c >= 'a' && c <= 'f')
                d = (unsigned)(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F')
                d = (unsigned)(c - 'A' + 10);
            else
                return 0;
            v = v << 4 | d;
        }
        *out = v;
        return 1;
    }
    return parse_dec(s, n, 0, UINT64_MAX, out);
}

static int name_is(const char *s, size_t n, const char *name) {
    return strlen(name) == n && !memcmp(s, name, n);
}

ax_status ax_goldfish_parse(const char *spec, ax_goldfish *out) {
    ax_goldfish g = {0};
    memset(out, 0, sizeof *out);
    if (!spec) return spec_err("(null)", "no spec given", "");
    const char *colon = strchr(spec, ':');
    size_t name_len = colon ? (size_t)(colon - spec) : strlen(spec);
    if (!*spec) return spec_err(spec, "empty spec", "");
    if (name_is(spec, name_len, "none")) {
        if (colon) return spec_err(spec, "'none' takes no parameters", "");
        *out = g;
        return AX_OK;
    } else if (name_is(spec, name_len, "static")) {
        g.strategy = AX_GOLDFISH_STATIC;
    } else if (name_is(spec, name_len, "hash")) {
        g.strategy = AX_GOLDFISH_HASH;
        g.h = AX_GOLDFISH_H_DEFAULT;
    } else {
        char name[24];
        snprintf(name, sizeof name, "%.*s'", (int)(name_len < 20 ? name_len : 20), spec);
        return spec_err(spec, "unknown strategy '", name);
    }
    g.k = AX_GOLDFISH_K_DEFAULT;
    if (colon) {
        int seen_k = 0, seen_h = 0, seen_seed = 0;
        const char *p = colon + 1;
        for (;;) {
            const char *end = strchr(p, ',');
            size_t len = end ? (size_t)(end - p) : strlen(p);
            const char *eq = memchr(p, '=', len);
            if (len == 0) return spec_err(spec, "empty parameter (a stray ':' or ',')", "");
            if (!eq) {
                char item[40];
                snprintf(item, sizeof item, "%.*s'", (int)(len < 30 ? len : 30), p);
                return spec_err(spec, "parameter without '=': '", item);
            }
            size_t klen = (size_t)(eq - p), vlen = len - klen - 1;
            const char *val = eq + 1;
            char key[16];
            snprintf(key, sizeof key, "%.*s", (int)(klen < 15 ? klen : 15), p);
            uint64_t v;
            if (klen == 1 && p[0] == 'k') {
                if (seen_k++) return spec_err(spec, "duplicate key k", "");
                if (!parse_dec(val, vlen, 2, AX_GOLDFISH_K_MAX, &v))
                    return spec_err(spec, "k must be an integer in 2..65536", "");
                g.k = (int)v;
            } else if (klen == 1 && p[0] == 'h' && g.strategy == AX_GOLDFISH_HASH) {
                if (seen_h++) return spec_err(spec, "duplicate key h", "");
                if (!parse_dec(val, vlen, 1, AX_GOLDFISH_H_MAX, &v))
                    return spec_err(spec, "h must be an integer in 1..1024", "");
                g.h = (int)v;
            } else if (klen == 4 && !memcmp(p, "seed", 4) && g.strategy == AX_GOLDFISH_HASH) {
                if (seen_seed++) return spec_err(spec, "duplicate key seed", "");
                if (!parse_seed(val, vlen, &v))
                    return spec_err(spec, "seed must be a decimal or 0x-hex 64-bit integer", "");
                g.seed = v;
            } else if (g.strategy == AX_GOLDFISH_STATIC) {
                return spec_err(spec, "static takes only k, not ", key[0] ? key : "(empty key)");
            } else {
                return spec_err(spec, "hash takes k, h and seed, not ",
                                key[0] ? key : "(empty key)");
            }
            if (!end) break;
            p = end + 1;
        }
    }
    *out = g;
    return AX_OK;
}

void ax_goldfish_format(const ax_goldfish *g, char *buf, size_t n) {
    if (!n) return;
    switch (g->strategy) {
    case AX_GOLDFISH_STATIC:
        snprintf(buf, n, "static:k=%d", g->k);
        break;
    case AX_GOLDFISH_HASH:
        snprintf(buf, n, "hash:k=%d,h=%d,seed=%" PRIu64, g->k, g->h, g->seed);
        break;
    default:
        snprintf(buf, n, "none");
        break;
    }
}

int ax_goldfish_context(const ax_goldfish *g) {
    return g->strategy == AX_GOLDFISH_HASH ? g->h : 0;
}

/* floor(2^64 / k) without 128-bit arithmetic: equals floor((2^64-1)/k) unless k divides 2^64 */
static uint64_t hash_threshold(uint64_t k) {
    uint64_t t = UINT64_MAX / k;
    if (UINT64_MAX % k == k - 1) t++;
    return t;
}

/* XXH3 dispatches on the length for every call; the window length is fixed for a whole mask, so
 * for 17..128 bytes (h = 5..32, the useful range) call the length class directly. Same
 * function XXH3_64bits_withSeed runs, so the same values (the tests compare against the
 * library); internal names are only relied on for the xxHash versions checked here. */
#if defined(XXH_VERSION_NUMBER) && XXH_VERSION_NUMBER >= 800 && XXH_VERSION_NUMBER <= 803 &&       \
    !(defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__)
#define AX_GF_DIRECT_MID 1
#else
#define AX_GF_DIRECT_MID 0
#endif

static inline __attribute__((always_inline)) uint64_t window_hash(const int32_t *w, int h,
                                                                  uint64_t seed, const int mid) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    /* the ids are hashed as little-endian int32, so big-endian hosts agree with x86 */
    (void)mid;
    uint32_t le[AX_GOLDFISH_H_MAX];
    for (int j = 0; j < h; j++) le[j] = __builtin_bswap32((uint32_t)w[j]);
    return XXH3_64bits_withSeed(le, (size_t)h * sizeof(int32_t), seed);
#else
#if AX_GF_DIRECT_MID
    if (mid)
        return XXH3_len_17to128_64b((const xxh_u8 *)w, (size_t)h * sizeof(int32_t), XXH3_kSecret,
                                    sizeof(XXH3_kSecret), seed);
#else
    (void)mid;
#endif
    return XXH3_64bits_withSeed(w, (size_t)h * sizeof(int32_t), seed);
#endif
}

/* one XXH3 per target past the document's first h; `mid` is a constant after inlining */
static inline __attribute__((always_inline)) void hash_loop(const int32_t *tokens,
                                                            const uint32_t *doc_pos, long n,
                                                            uint8_t *keep, int h, uint64_t seed,
                                                            uint64_t t, const int mid) {
    if (doc_pos) {
#pragma GCC unroll 4
        for (long i = 0; i < n; i++)
            keep[i] = doc_pos[i] < (uint32_t)h || window_hash(tokens + i - h, h, seed, mid) >= t;
    } else { /* one document starting at tokens[0] */
        long head = n < h ? n : h;
        memset(keep, 1, (size_t)head);
        for (long i = head; i < n; i++) keep[i] = window_hash(tokens + i - h, h, seed, mid) >= t;
    }
}

void ax_goldfish_mask(const ax_goldfish *g, const int32_t *tokens, const uint32_t *doc_pos, long n,
                      uint8_t *keep) {
    if (n <= 0) return;
    switch (g->strategy) {
    case AX_GOLDFISH_STATIC: {
        /* a counter instead of a division per target */
        int c = 0, k = g->k;
        for (long i = 0; i < n; i++) {
            if (++c == k) {
                keep[i] = 0;
                c = 0;
            } else {
                keep[i] = 1;
            }
        }
        break;
    }
    case AX_GOLDFISH_HASH: {
        const uint64_t t = hash_threshold((uint64_t)g->k);
        const size_t len = (size_t)g->h * sizeof(int32_t);
        /* the default h as a compile-time length: XXH3's length branches fold away (~15%) */
        if (AX_GF_DIRECT_MID && g->h == AX_GOLDFISH_H_DEFAULT)
            hash_loop(tokens, doc_pos, n, keep, AX_GOLDFISH_H_DEFAULT, g->seed, t, 1);
        else if (AX_GF_DIRECT_MID && len >= 17 && len <= 128)
            hash_loop(tokens, doc_pos, n, keep, g->h, g->seed, t, 1);
        else
            hash_loop(tokens, doc_pos, n, keep, g->h, g->seed, t, 0);
        break;
    }
    default:
        memset(keep, 1, (size_t)n);
        break;
    }
}

long ax_goldfish_count_dropped(const uint8_t *keep, long n) {
    long d = 0;
    for (long i = 0; i < n; i++) d += keep[i] == 0;
    return d;
}
