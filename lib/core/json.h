/* Minimal JSON: a writer into a growable buffer, and a DOM parser for manifests, config
 * files and JSONL records. Strings are UTF-8; \uXXXX escapes (with surrogate pairs) decode. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "lib/core/status.h"
#include "lib/core/utf8.h"

/* ---- writer ----
 * Commas and nesting are tracked for you: ax_jw_key("x"); ax_jw_int(3); ... */
typedef struct {
    char *buf;
    size_t len, cap;
    int depth;
    uint8_t need_comma[64]; /* per nesting level */
    int after_key;
    int oom; /* sticky allocation failure */
} ax_jw;

void ax_jw_init(ax_jw *w);
void ax_jw_free(ax_jw *w);
void ax_jw_obj_begin(ax_jw *w);
void ax_jw_obj_end(ax_jw *w);
void ax_jw_arr_begin(ax_jw *w);
void ax_jw_arr_end(ax_jw *w);
void ax_jw_key(ax_jw *w, const char *key);
/* Strings (and keys) are escaped and always written as valid UTF-8: each ill-formed
 * subsequence of the input (a stray continuation byte, a truncated or overlong sequence, a
 * surrogate, a code point past U+10FFFF) becomes one U+FFFD per maximal subpart, as Unicode
 * recommends. Writers that cut decoded text mid-character should cut at character boundaries
 * first (ax_utf8_clip) so nothing is replaced. */
void ax_jw_str(ax_jw *w, const char *s);            /* escaped */
void ax_jw_strn(ax_jw *w, const char *s, size_t n); /* escaped, n bytes (may hold NUL) */
void ax_jw_int(ax_jw *w, long long v);
void ax_jw_uint(ax_jw *w, unsigned long long v);
void ax_jw_num(ax_jw *w, double v); /* shortest round-trip form ("%.17g"); NaN/inf -> null */
void ax_jw_bool(ax_jw *w, int v);
void ax_jw_null(ax_jw *w);
void ax_jw_raw(ax_jw *w, const char *json); /* a pre-serialised value */
/* the text so far (NUL-terminated); NULL if an allocation failed */
const char *ax_jw_text(const ax_jw *w);

/* ---- UTF-8 (lib/core/utf8.h: ax_utf8_next, ax_utf8_decode, ax_utf8_put) ---- */
/* The part of s[0..n) between character boundaries: skips continuation bytes at the start
 * (a character cut at its beginning) and drops an incomplete sequence at the end (cut at its
 * end). Sets *off and returns the length kept; bytes inside are not checked. */
size_t ax_utf8_clip(const char *s, size_t n, size_t *off);

/* ---- parser ---- */
typedef enum {
    AX_JSON_NULL,
    AX_JSON_BOOL,
    AX_JSON_NUM,
    AX_JSON_STR,
    AX_JSON_ARR,
    AX_JSON_OBJ
} ax_json_type;

typedef struct ax_json ax_json;
struct ax_json {
    ax_json_type type;
    double num; /* NUM (also BOOL: 0/1) */
    char *str;  /* STR: decoded, NUL-terminated; str_len excludes the NUL */
    size_t str_len;
    char **keys;     /* OBJ: keys[i] names items[i] */
    ax_json **items; /* ARR and OBJ */
    size_t n;
};

/* Parses exactly one value (surrounding whitespace allowed). On error returns AX_ERR_CORRUPT
 * with a message naming `what` (e.g. the file name) and the byte offset. */
ax_status ax_json_parse(const char *text, size_t len, const char *what, ax_json **out);
/* Same, but the error message ends with `advice` (what the user should do) instead of the
 * generic "fix the file or write it again", e.g. for checkpoints. */
ax_status ax_json_parse_advice(const char *text, size_t len, const char *what, const char *advice,
                               ax_json **out);
void ax_json_free(ax_json *v);
const ax_json *ax_json_get(const ax_json *obj, const char *key); /* NULL if absent/not OBJ */
const char *ax_json_type_name(ax_json_type t);                   /* "a number", "an array", ... */
void ax_jw_json(ax_jw *w, const ax_json *v); /* a parsed value written back as it was */
/* typed getters: return AX_ERR_CORRUPT naming `what` and key when absent or wrong type */
ax_status ax_json_get_num(const ax_json *obj, const char *key, const char *what, double *out);
ax_status ax_json_get_i64(const ax_json *obj, const char *key, const char *what, int64_t *out);
/* 1 and *out set when v is a number that is integral and within [lo, hi] (so converting it is
 * defined behaviour), else 0. Parsed numbers are always finite (overflow is a parse error). */
int ax_json_int_in(const ax_json *v, int64_t lo, int64_t hi, int64_t *out);
ax_status ax_json_get_str(const ax_json *obj, const char *key, const char *what, const char **out);
/* a u64 stored as a hex string "0x..." (JSON numbers cannot hold 64 bits exactly) */
ax_status ax_json_get_hex64(const ax_json *obj, const char *key, const char *what, uint64_t *out);
