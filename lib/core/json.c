/* JSON writer and DOM parser. The parser is one linear pass (JSONL corpora call it once per
 * line), recursive with a depth cap so hostile input cannot overflow the stack. */
#include "lib/core/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AX_JSON_MAX_DEPTH 512

/* ---------------------------------------------------------------- writer */

void ax_jw_init(ax_jw *w) {
    memset(w, 0, sizeof *w);
}

void ax_jw_free(ax_jw *w) {
    free(w->buf);
    memset(w, 0, sizeof *w);
}

static void jw_put(ax_jw *w, const char *s, size_t n) {
    if (w->oom) return;
    if (w->len + n + 1 > w->cap) {
        size_t cap = w->cap ? w->cap : 256;
        while (cap < w->len + n + 1) cap *= 2;
        char *b = realloc(w->buf, cap);
        if (!b) {
            w->oom = 1;
            return;
        }
        w->buf = b;
        w->cap = cap;
    }
    memcpy(w->buf + w->len, s, n);
    w->len += n;
    w->buf[w->len] = 0;
}

static void jw_putc(ax_jw *w, char c) {
    jw_put(w, &c, 1);
}

/* Called before every value: emits the separating comma unless a key was just written. */
static void jw_pre(ax_jw *w) {
    if (w->after_key) {
        w->after_key = 0;
        return;
    }
    if (w->depth > 0 && w->need_comma[w->depth]) jw_putc(w, ',');
    w->need_comma[w->depth] = 1;
}

static void jw_open(ax_jw *w, char c) {
    jw_pre(w);
    jw_putc(w, c);
    if (w->depth + 1 >= (int)sizeof w->need_comma) {
        w->oom = 1; /* deeper than the writer tracks: report as a failed document */
        return;
    }
    w->need_comma[++w->depth] = 0;
}

static void jw_close(ax_jw *w, char c) {
    jw_putc(w, c);
    if (w->depth > 0) w->depth--;
}

void ax_jw_obj_begin(ax_jw *w) {
    jw_open(w, '{');
}
void ax_jw_obj_end(ax_jw *w) {
    jw_close(w, '}');
}
void ax_jw_arr_begin(ax_jw *w) {
    jw_open(w, '[');
}
void ax_jw_arr_end(ax_jw *w) {
    jw_close(w, ']');
}

size_t ax_utf8_clip(const char *s, size_t n, size_t *off) {
    const unsigned char *u = (const unsigned char *)s;
    size_t a = 0;
    while (a < n && a < 3 && (u[a] & 0xC0) == 0x80) a++; /* tail of a character cut before s */
    size_t b = n, k = 0;
    /* walk back over at most 3 continuation bytes to the last lead byte; drop it if its
     * sequence is longer than what is left */
    while (b - k > a && k < 3 && (u[b - k - 1] & 0xC0) == 0x80) k++;
    if (b - k > a) {
        unsigned char c = u[b - k - 1];
        size_t want = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
        if (want > k + 1) b -= k + 1;
    }
    *off = a;
    return b - a;
}

/* the characters JSON escapes with a letter, and the letters (others below 0x20: \u00XX) */
static const char ESC_RAW[] = "\"\\\n\r\t\b\f", ESC_CODE[] = "\"\\nrtbf";

static void jw_escaped(ax_jw *w, const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    jw_putc(w, '"');
    size_t run = 0; /* bytes copied verbatim in one jw_put */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x80) {
            size_t len;
            if (ax_utf8_next(s + i, n - i, &len)) {
                i += len - 1; /* a whole character: part of the verbatim run */
                continue;
            }
            jw_put(w, s + run, i - run);
            jw_put(w, "\xef\xbf\xbd", 3); /* U+FFFD for the ill-formed subpart */
            i += len - 1;
            run = i + 1;
            continue;
        }
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        jw_put(w, s + run, i - run);
        run = i + 1;
        const char *k = memchr(ESC_RAW, c, sizeof ESC_RAW - 1);
        char e[6] = {'\\', k ? ESC_CODE[k - ESC_RAW] : 'u', '0', '0', hex[c >> 4], hex[c & 15]};
        jw_put(w, e, k ? 2 : 6);
    }
    jw_put(w, s + run, n - run);
    jw_putc(w, '"');
}

void ax_jw_key(ax_jw *w, const char *key) {
    jw_pre(w);
    jw_escaped(w, key, strlen(key));
    jw_putc(w, ':');
    w->after_key = 1;
}

void ax_jw_str(ax_jw *w, const char *s) {
    ax_jw_strn(w, s, strlen(s));
}

void ax_jw_strn(ax_jw *w, const char *s, size_t n) {
    jw_pre(w);
    jw_escaped(w, s, n);
}

void ax_jw_int(ax_jw *w, long long v) {
    char b[32];
    snprintf(b, sizeof b, "%lld", v);
    ax_jw_raw(w, b);
}

void ax_jw_uint(ax_jw *w, unsigned long long v) {
    char b[32];
    snprintf(b, sizeof b, "%llu", v);
    ax_jw_raw(w, b);
}

void ax_jw_num(ax_jw *w, double v) {
    if (!isfinite(v)) {
        ax_jw_null(w);
        return;
    }
    /* shortest of %.15g/%.16g/%.17g that reads back exactly: 0.1 stays "0.1" */
    char b[40];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(b, sizeof b, "%.*g", prec, v);
        if (strtod(b, NULL) == v) break;
    }
    ax_jw_raw(w, b);
}

void ax_jw_bool(ax_jw *w, int v) {
    ax_jw_raw(w, v ? "true" : "false");
}

void ax_jw_null(ax_jw *w) {
    ax_jw_raw(w, "null");
}

void ax_jw_raw(ax_jw *w, const char *json) {
    jw_pre(w);
    jw_put(w, json, strlen(json));
}

const char *ax_jw_text(const ax_jw *w) {
    if (w->oom) return NULL;
    return w->buf ? w->buf : "";
}

/* ---------------------------------------------------------------- parser */

typedef struct {
    const char *s;
    size_t n, i;
    const char *what, *advice;
    int depth;
} jp;

static ax_status jp_err(const jp *p, size_t at, const char *detail) {
    return ax_errorf(AX_ERR_CORRUPT, "%s: invalid JSON at byte %zu: %s; %s", p->what, at, detail,
                     p->advice);
}

static inline void jp_ws(jp *p) {
    while (p->i < p->n) {
        char c = p->s[p->i];
        if (c != ' ' && c != '\n' && c != '\r' && c != '\t') break;
        p->i++;
    }
}

static ax_json *jp_node(ax_json_type t) {
    ax_json *v = calloc(1, sizeof *v);
    if (v) v->type = t;
    return v;
}

static ax_status jp_oom(void) {
    return ax_errorf(AX_ERR_NOMEM, "out of memory while parsing JSON; free memory and retry");
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* reads 4 hex digits at s[i..i+3]; -1 when malformed or short */
static long jp_hex4(const jp *p, size_t i) {
    if (i + 4 > p->n) return -1;
    long v = 0;
    for (int k = 0; k < 4; k++) {
        int h = hexval(p->s[i + k]);
        if (h < 0) return -1;
        v = v * 16 + h;
    }
    return v;
}

/* the escapes with a letter (or the character itself) and what they stand for */
static const char UNESC_CODE[] = "\"\\/bfnrt", UNESC_RAW[] = "\"\\/\b\f\n\r\t";

/* p->i is at the opening quote. Pass 1 finds the end and validates; pass 2 decodes escapes
 * (skipped when there are none). Decoded text is never longer than the raw text. */
static ax_status jp_string(jp *p, char **out, size_t *out_len) {
    size_t start = ++p->i, i = start;
    int escapes = 0;
    for (;;) {
        if (i >= p->n) return jp_err(p, start - 1, "unterminated string");
        unsigned char c = (unsigned char)p->s[i];
        if (c == '"') break;
        if (c == '\\') {
            escapes = 1;
            if (i + 1 >= p->n) return jp_err(p, start - 1, "unterminated string");
            i += 2;
            continue;
        }
        if (c < 0x20) return jp_err(p, i, "raw control character in string (escape it)");
        i++;
    }
    size_t raw = i - start;
    char *o = malloc(raw + 1);
    if (!o) return jp_oom();
    size_t n = 0;
    if (!escapes) {
        memcpy(o, p->s + start, raw);
        n = raw;
    } else {
        for (size_t k = start; k < i;) {
            char c = p->s[k];
            if (c != '\\') {
                o[n++] = c;
                k++;
                continue;
            }
            char e = p->s[k + 1];
            const char *simple = e ? strchr(UNESC_CODE, e) : NULL;
            k += 2;
            if (simple) {
                o[n++] = UNESC_RAW[simple - UNESC_CODE];
                continue;
            }
            if (e != 'u') {
                free(o);
                return jp_err(p, k - 2, "unknown escape in string");
            }
            long cp = k + 4 <= i ? jp_hex4(p, k) : -1;
            if (cp < 0) {
                free(o);
                return jp_err(p, k - 2, "bad \\u escape (needs 4 hex digits)");
            }
            k += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                long lo =
                    (k + 6 <= i && p->s[k] == '\\' && p->s[k + 1] == 'u') ? jp_hex4(p, k + 2) : -1;
                if (lo >= 0xDC00 && lo <= 0xDFFF) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    k += 6;
                } else {
                    cp = 0xFFFD; /* lone high surrogate: real corpora have them */
                }
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                cp = 0xFFFD; /* lone low surrogate */
            }
            /* at most 4 output bytes for 6 or 12 input bytes: stays within raw */
            n += ax_utf8_put((uint8_t *)o + n, (uint32_t)cp);
        }
    }
    o[n] = 0;
    p->i = i + 1;
    *out = o;
    *out_len = n;
    return AX_OK;
}

static ax_status jp_number(jp *p, double *out) {
    const char *s = p->s;
    size_t i = p->i, n = p->n, start = i;
    int neg = 0, simple = 1;
    if (i < n && s[i] == '-') {
        neg = 1;
        i++;
    }
    if (i >= n || s[i] < '0' || s[i] > '9') return jp_err(p, start, "expected a value");
    size_t dstart = i;
    if (s[i] == '0')
        i++;
    else
        while (i < n && s[i] >= '0' && s[i] <= '9') i++;
    size_t ndig = i - dstart;
    if (i < n && s[i] == '.') {
        simple = 0;
        i++;
        if (i >= n || s[i] < '0' || s[i] > '9') return jp_err(p, i, "expected a digit after '.'");
        while (i < n && s[i] >= '0' && s[i] <= '9') i++;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        simple = 0;
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-')) i++;
        if (i >= n || s[i] < '0' || s[i] > '9') return jp_err(p, i, "expected exponent digits");
        while (i < n && s[i] >= '0' && s[i] <= '9') i++;
    }
    p->i = i;
    if (simple && ndig <= 15) { /* exact in a double: skip strtod */
        int64_t v = 0;
        for (size_t k = dstart; k < i; k++) v = v * 10 + (s[k] - '0');
        *out = neg ? -(double)v : (double)v;
        return AX_OK;
    }
    /* strtod needs a NUL-terminated copy: the input need not be terminated */
    char small[64], *buf = small;
    size_t len = i - start;
    if (len >= sizeof small && !(buf = malloc(len + 1))) return jp_oom();
    memcpy(buf, s + start, len);
    buf[len] = 0;
    *out = strtod(buf, NULL);
    if (buf != small) free(buf);
    /* 1e999 overflows to inf: no reader can use it, and inf/NaN must never reach an int cast */
    if (!isfinite(*out)) return jp_err(p, start, "number out of range");
    return AX_OK;
}

static ax_status jp_value(jp *p, ax_json **out);

/* grows items (and keys for objects) so one more fits */
static int jp_grow(ax_json *v, size_t *cap) {
    if (v->n < *cap) return 1;
    size_t nc = *cap ? *cap * 2 : 4;
    ax_json **it = realloc(v->items, nc * sizeof *it);
    if (!it) return 0;
    v->items = it;
    if (v->type == AX_JSON_OBJ) {
        char **k = realloc(v->keys, nc * sizeof *k);
        if (!k) return 0;
        v->keys = k;
    }
    *cap = nc;
    return 1;
}

static ax_status jp_container(jp *p, ax_json *v) {
    int obj = v->type == AX_JSON_OBJ;
    char close = obj ? '}' : ']';
    size_t open_at = p->i, cap = 0;
    if (++p->depth > AX_JSON_MAX_DEPTH) return jp_err(p, open_at, "nesting deeper than 512");
    p->i++;
    jp_ws(p);
    if (p->i < p->n && p->s[p->i] == close) {
        p->i++;
        p->depth--;
        return AX_OK;
    }
    for (;;) {
        if (!jp_grow(v, &cap)) return jp_oom();
        jp_ws(p);
        if (obj) {
            if (p->i >= p->n || p->s[p->i] != '"')
                return jp_err(p, p->i, "expected a string key in object");
            size_t klen;
            char *key;
            ax_status st = jp_string(p, &key, &klen);
            if (st) return st;
            v->keys[v->n] = key;
            v->items[v->n] = NULL;
            v->n++; /* counted now so the key is freed on error */
            jp_ws(p);
            if (p->i >= p->n || p->s[p->i] != ':') return jp_err(p, p->i, "expected ':' after key");
            p->i++;
            st = jp_value(p, &v->items[v->n - 1]);
            if (st) return st;
        } else {
            v->items[v->n] = NULL;
            v->n++;
            ax_status st = jp_value(p, &v->items[v->n - 1]);
            if (st) return st;
        }
        jp_ws(p);
        if (p->i >= p->n)
            return jp_err(p, open_at, obj ? "unterminated object" : "unterminated array");
        char c = p->s[p->i];
        if (c == ',') {
            p->i++;
            continue;
        }
        if (c == close) {
            p->i++;
            p->depth--;
            return AX_OK;
        }
        return jp_err(p, p->i, obj ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static ax_status jp_value(jp *p, ax_json **out) {
    jp_ws(p);
    if (p->i >= p->n) return jp_err(p, p->i, "unexpected end of input, expected a value");
    char c = p->s[p->i];
    ax_json *v;
    ax_status st = AX_OK;
    switch (c) {
    case '{':
    case '[':
        if (!(v = jp_node(c == '{' ? AX_JSON_OBJ : AX_JSON_ARR))) return jp_oom();
        *out = v;
        return jp_container(p, v);
    case '"':
        if (!(v = jp_node(AX_JSON_STR))) return jp_oom();
        *out = v;
        return jp_string(p, &v->str, &v->str_len);
    case 't':
    case 'f':
    case 'n': {
        const char *word = c == 't' ? "true" : c == 'f' ? "false" : "null";
        size_t wl = strlen(word);
        if (p->n - p->i < wl || memcmp(p->s + p->i, word, wl) != 0)
            return jp_err(p, p->i, "unknown literal (expected true, false or null)");
        if (!(v = jp_node(c == 'n' ? AX_JSON_NULL : AX_JSON_BOOL))) return jp_oom();
        v->num = c == 't';
        p->i += wl;
        *out = v;
        return AX_OK;
    }
    default:
        if (c != '-' && (c < '0' || c > '9')) return jp_err(p, p->i, "expected a value");
        if (!(v = jp_node(AX_JSON_NUM))) return jp_oom();
        *out = v;
        st = jp_number(p, &v->num);
        return st;
    }
}

ax_status ax_json_parse(const char *text, size_t len, const char *what, ax_json **out) {
    return ax_json_parse_advice(text, len, what, "fix the file or write it again", out);
}

ax_status ax_json_parse_advice(const char *text, size_t len, const char *what, const char *advice,
                               ax_json **out) {
    *out = NULL;
    jp p = {text, len, 0, what ? what : "JSON", advice ? advice : "fix the file or write it again",
            0};
    ax_json *v = NULL;
    ax_status st = jp_value(&p, &v);
    if (st == AX_OK) {
        jp_ws(&p);
        if (p.i != p.n) st = jp_err(&p, p.i, "unexpected text after the value");
    }
    if (st != AX_OK) {
        ax_json_free(v);
        return st;
    }
    *out = v;
    return AX_OK;
}

void ax_json_free(ax_json *v) {
    if (!v) return;
    for (size_t i = 0; i < v->n; i++) {
        ax_json_free(v->items[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->str);
    free(v);
}

void ax_jw_json(ax_jw *w, const ax_json *v) {
    switch (v->type) {
    case AX_JSON_NULL:
        ax_jw_null(w);
        break;
    case AX_JSON_BOOL:
        ax_jw_bool(w, v->num != 0);
        break;
    case AX_JSON_NUM:
        ax_jw_num(w, v->num);
        break;
    case AX_JSON_STR:
        ax_jw_strn(w, v->str, v->str_len);
        break;
    case AX_JSON_ARR:
        ax_jw_arr_begin(w);
        for (size_t i = 0; i < v->n; i++) ax_jw_json(w, v->items[i]);
        ax_jw_arr_end(w);
        break;
    case AX_JSON_OBJ:
        ax_jw_obj_begin(w);
        for (size_t i = 0; i < v->n; i++) ax_jw_key(w, v->keys[i]), ax_jw_json(w, v->items[i]);
        ax_jw_obj_end(w);
        break;
    }
}

const ax_json *ax_json_get(const ax_json *obj, const char *key) {
    if (!obj || obj->type != AX_JSON_OBJ) return NULL;
    for (size_t i = 0; i < obj->n; i++)
        if (strcmp(obj->keys[i], key) == 0) return obj->items[i];
    return NULL;
}

const char *ax_json_type_name(ax_json_type t) {
    static const char *const names[] = {"null",     "a boolean", "a number",
                                        "a string", "an array",  "an object"};
    return t <= AX_JSON_OBJ ? names[t] : "?";
}

static ax_status get_typed(const ax_json *obj, const char *key, const char *what, ax_json_type t,
                           const ax_json **out) {
    const ax_json *v = ax_json_get(obj, key);
    if (!v)
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: missing key \"%s\"; the file is damaged or not of this kind", what,
                         key);
    if (v->type != t)
        return ax_errorf(AX_ERR_CORRUPT, "%s: key \"%s\" is %s, expected %s; the file is damaged",
                         what, key, ax_json_type_name(v->type), ax_json_type_name(t));
    *out = v;
    return AX_OK;
}

ax_status ax_json_get_num(const ax_json *obj, const char *key, const char *what, double *out) {
    const ax_json *v;
    AX_CHECK(get_typed(obj, key, what, AX_JSON_NUM, &v));
    *out = v->num;
    return AX_OK;
}

ax_status ax_json_get_i64(const ax_json *obj, const char *key, const char *what, int64_t *out) {
    const ax_json *v;
    AX_CHECK(get_typed(obj, key, what, AX_JSON_NUM, &v));
    /* 2^63 is exact in a double; anything at or past it does not fit */
    if (v->num != floor(v->num) || v->num < -9223372036854775808.0 ||
        v->num >= 9223372036854775808.0)
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: key \"%s\" = %g is not an integer; the file is damaged", what, key,
                         v->num);
    *out = (int64_t)v->num;
    return AX_OK;
}

int ax_json_int_in(const ax_json *v, int64_t lo, int64_t hi, int64_t *out) {
    if (!v || v->type != AX_JSON_NUM || !isfinite(v->num) || v->num != floor(v->num)) return 0;
    /* compare as doubles before converting: a double outside int64 must not be cast */
    if (v->num < (double)lo || v->num > (double)hi) return 0;
    if (v->num >= 9223372036854775808.0) return 0; /* (double)INT64_MAX rounds up to 2^63 */
    int64_t x = (int64_t)v->num;
    if (x < lo || x > hi) return 0;
    *out = x;
    return 1;
}

ax_status ax_json_get_str(const ax_json *obj, const char *key, const char *what, const char **out) {
    const ax_json *v;
    AX_CHECK(get_typed(obj, key, what, AX_JSON_STR, &v));
    *out = v->str;
    return AX_OK;
}

ax_status ax_json_get_hex64(const ax_json *obj, const char *key, const char *what, uint64_t *out) {
    const ax_json *v;
    AX_CHECK(get_typed(obj, key, what, AX_JSON_STR, &v));
    const char *s = v->str;
    size_t n = v->str_len;
    int ok = n > 2 && n <= 18 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
    uint64_t x = 0;
    for (size_t i = 2; ok && i < n; i++) {
        int h = hexval(s[i]);
        if (h < 0) ok = 0;
        x = x << 4 | (uint64_t)(h & 15);
    }
    if (!ok)
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: key \"%s\" = \"%s\" is not a hex string like \"0x1f\"; the file is "
                         "damaged",
                         what, key, s);
    *out = x;
    return AX_OK;
}
