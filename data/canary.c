/* Canaries: see canary.h. */
#include "data/canary.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "data/axd.h"
#include "data/split.h"
#include "data/tokenizer.h"
#include "lib/core/fsutil.h"
#include "lib/core/json.h"
#include "lib/core/keyset.h"
#include "lib/core/rng.h"

/* ---------------------------------------------------------------- the format */

static const char *alphabet(char kind, int *base) {
    switch (kind) {
    case 'd':
        *base = 10;
        return "0123456789";
    case 'a':
        *base = 26;
        return "abcdefghijklmnopqrstuvwxyz";
    default:
        *base = 16;
        return "0123456789abcdef";
    }
}

static ax_status bad_format(const char *fmt, const char *why) {
    return ax_errorf(AX_ERR_ARG,
                     "--format \"%s\": %s; placeholders are {dN} (digits), {aN} (lowercase "
                     "letters), {hN} (hex), 1 <= N <= 64, and {{ }} are literal braces",
                     fmt, why);
}

static ax_status add_literal(ax_canary_format *f, int *len, char ch, const char *fmt) {
    if (*len + 1 >= AX_CANARY_MAX_TEXT) return bad_format(fmt, "the text is too long");
    if (!f->n_parts || f->part[f->n_parts - 1].kind) {
        if (f->n_parts == AX_CANARY_MAX_PARTS) return bad_format(fmt, "too many parts");
        f->part[f->n_parts].kind = 0;
        f->part[f->n_parts].n = 0;
        f->part[f->n_parts].off = *len;
        f->n_parts++;
    }
    f->lit[(*len)++] = ch;
    f->part[f->n_parts - 1].n++;
    return AX_OK;
}

ax_status ax_canary_format_parse(const char *fmt, ax_canary_format *f) {
    memset(f, 0, sizeof *f);
    f->first_ph = -1;
    f->space = 1;
    int lit_len = 0, text_len = 0;
    for (const char *p = fmt; *p;) {
        if ((p[0] == '{' && p[1] == '{') || (p[0] == '}' && p[1] == '}')) {
            AX_CHECK(add_literal(f, &lit_len, p[0], fmt));
            text_len++;
            p += 2;
            continue;
        }
        if (p[0] == '}') return bad_format(fmt, "a '}' without its '{'");
        if (p[0] != '{') {
            AX_CHECK(add_literal(f, &lit_len, p[0], fmt));
            text_len++;
            p++;
            continue;
        }
        char kind = p[1];
        if (kind != 'd' && kind != 'a' && kind != 'h')
            return bad_format(fmt, "a '{' that starts no placeholder");
        const char *q = p + 2;
        int n = 0, digits = 0;
        while (*q >= '0' && *q <= '9' && digits < 3) n = 10 * n + (*q++ - '0'), digits++;
        if (*q != '}' || digits == 0 || (digits > 1 && p[2] == '0'))
            return bad_format(fmt, "a placeholder needs a width, e.g. {d6}");
        if (n < 1 || n > 64) return bad_format(fmt, "a placeholder's width must be 1 to 64");
        if (f->n_parts == AX_CANARY_MAX_PARTS) return bad_format(fmt, "too many parts");
        text_len += n;
        if (text_len >= AX_CANARY_MAX_TEXT) return bad_format(fmt, "the text is too long");
        if (f->first_ph < 0) f->first_ph = f->n_parts;
        f->part[f->n_parts].kind = kind;
        f->part[f->n_parts].n = n;
        f->n_parts++;
        int base;
        alphabet(kind, &base);
        f->space *= pow((double)base, (double)n);
        p = q + 1;
    }
    if (f->first_ph < 0) return bad_format(fmt, "no placeholder, so no secret");
    f->prefix_len = f->first_ph ? f->part[0].n : 0;
    return AX_OK;
}

void ax_canary_prefix(const ax_canary_format *f, char *out) {
    memcpy(out, f->lit, (size_t)f->prefix_len);
    out[f->prefix_len] = 0;
}

/* fills the secret; pick(c, base) gives placeholder character c's value */
typedef struct {
    uint64_t seed, stream, index, nth;
    int random;
} draw;

static void render(const ax_canary_format *f, const draw *dr, char *out) {
    int len = 0, c = 0;
    /* mixed radix from the last character: find the placeholder characters' values first */
    uint64_t rest = dr->nth;
    int total = 0;
    for (int k = f->first_ph; k < f->n_parts; k++)
        if (f->part[k].kind) total += f->part[k].n;
    int vals[AX_CANARY_MAX_TEXT] = {0};
    if (!dr->random) {
        int pos = total;
        for (int k = f->n_parts - 1; k >= f->first_ph; k--) {
            if (!f->part[k].kind) continue;
            int base;
            alphabet(f->part[k].kind, &base);
            for (int i = 0; i < f->part[k].n; i++) {
                vals[--pos] = (int)(rest % (uint64_t)base);
                rest /= (uint64_t)base;
            }
        }
    }
    for (int k = f->first_ph; k < f->n_parts; k++) {
        if (!f->part[k].kind) {
            memcpy(out + len, f->lit + f->part[k].off, (size_t)f->part[k].n);
            len += f->part[k].n;
            continue;
        }
        int base;
        const char *al = alphabet(f->part[k].kind, &base);
        for (int i = 0; i < f->part[k].n; i++, c++) {
            uint64_t v = dr->random ? ax_rng_below(dr->seed, dr->stream,
                                                   dr->index * AX_CANARY_MAX_TEXT + (uint64_t)c,
                                                   (uint64_t)base)
                                    : (uint64_t)vals[c];
            out[len++] = al[v];
        }
    }
    out[len] = 0;
}

void ax_canary_secret_random(const ax_canary_format *f, uint64_t seed, uint64_t stream,
                             uint64_t index, char *out) {
    draw d = {.seed = seed, .stream = stream, .index = index, .random = 1};
    render(f, &d, out);
}

void ax_canary_secret_nth(const ax_canary_format *f, uint64_t i, char *out) {
    draw d = {.nth = i};
    render(f, &d, out);
}

/* ---------------------------------------------------------------- a set of strings */

/* strings in a set by their 64-bit hash: a collision only skips a fresh string */
static uint64_t skey(const char *s) {
    uint64_t h = XXH3_64bits(s, strlen(s));
    return h ? h : 1;
}

/* ---------------------------------------------------------------- planting */

#define MAX_TRIES 4096 /* documents drawn per copy before giving up */

typedef struct {
    char *secret;
    int repeats;
    int32_t *tokens; /* of lead + prefix + secret */
    size_t n_tokens;
    int prefix_tokens;
} canary;

typedef struct {
    long canary;
    uint64_t doc;     /* input document (between sentences) or the gap before it (as a
                         document: 0..n_docs) */
    uint64_t pos;     /* token position in its document, kept current as others land */
    uint64_t out_doc; /* in the output */
} insertion;

/* a document that copies are planted in: its tokens (end-of-text last) and its copies */
typedef struct {
    int32_t *t;
    size_t n;
    long *ins;
    int n_ins;
    int reencodes; /* decoding and re-encoding it gave its tokens before any copy landed */
} doc_state;

typedef struct {
    const ax_canary_config *c;
    const ax_tokenizer_t *tok;
    ax_tok_encoder_t *enc;
    const ax_axd_t *ds;
    const char *lead;
    canary *cs;
    insertion *ins;
    long n_ins;
    doc_state **docs; /* [n_docs], NULL until a copy lands there */
    uint64_t redrawn;
} planter;

static ax_status check_config(const ax_canary_config *c) {
    if (c->n_repeats < 1)
        return ax_errorf(AX_ERR_ARG, "--repeats: give at least one repeat count, e.g. 1,2,4,8");
    for (int i = 0; i < c->n_repeats; i++)
        if (c->repeats[i] < 1)
            return ax_errorf(AX_ERR_ARG, "--repeats: %d is not a positive repeat count",
                             c->repeats[i]);
    if (c->per_repeat < 1)
        return ax_errorf(AX_ERR_ARG, "--per-repeat %d: give at least 1", c->per_repeat);
    if (c->references < 0)
        return ax_errorf(AX_ERR_ARG, "--references %ld: give 0 or more", c->references);
    if (c->within < 0)
        return ax_errorf(AX_ERR_ARG, "--within %ld: give 0 (anywhere) or a token count", c->within);
    if (ax_data_same_file(c->input, c->out) || ax_data_same_file(c->input, c->secrets))
        return ax_errorf(AX_ERR_ARG, "--out/--secrets must not be the input %s; name new files",
                         c->input);
    if (ax_data_same_file(c->out, c->secrets))
        return ax_errorf(AX_ERR_ARG, "--out and --secrets are the same file (%s)", c->out);
    return AX_OK;
}

/* the secrets file's JSON (see canary.h) */
static void secrets_json(ax_jw *w, const planter *pl, const ax_canary_format *f, const char *prefix,
                         long nc, char **refs, long nr, int complete, const ax_axd_t *out) {
    const ax_canary_config *c = pl->c;
    char hex[32];
    snprintf(hex, sizeof hex, "0x%016llx", (unsigned long long)ax_axd_checksum(out));
    ax_jw_obj_begin(w);
    ax_jw_key(w, "version"), ax_jw_int(w, 2);
    ax_jw_key(w, "format"), ax_jw_str(w, c->format);
    ax_jw_key(w, "space"), ax_jw_num(w, f->space);
    ax_jw_key(w, "seed"), ax_jw_uint(w, c->seed);
    ax_jw_key(w, "tokenizer"), ax_jw_str(w, c->tokenizer);
    ax_jw_key(w, "dataset"), ax_jw_str(w, c->out);
    ax_jw_key(w, "dataset_xxh3"), ax_jw_str(w, hex);
    ax_jw_key(w, "dataset_docs"), ax_jw_uint(w, ax_axd_n_docs(out));
    ax_jw_key(w, "dataset_tokens"), ax_jw_uint(w, ax_axd_n_tokens(out));
    ax_jw_key(w, "placement"), ax_jw_str(w, c->as_documents ? "documents" : "sentence-boundary");
    ax_jw_key(w, "within"), ax_jw_int(w, c->within);
    ax_jw_key(w, "lead"), ax_jw_str(w, pl->lead);
    ax_jw_key(w, "references_complete"), ax_jw_bool(w, complete);
    ax_jw_key(w, "canaries");
    ax_jw_arr_begin(w);
    long at = 0; /* insertions are numbered canary by canary */
    for (long i = 0; i < nc; i++) {
        const canary *cn = &pl->cs[i];
        ax_jw_obj_begin(w);
        ax_jw_key(w, "id"), ax_jw_int(w, i);
        ax_jw_key(w, "prefix"), ax_jw_str(w, prefix);
        ax_jw_key(w, "secret"), ax_jw_str(w, cn->secret);
        ax_jw_key(w, "repeats"), ax_jw_int(w, cn->repeats);
        ax_jw_key(w, "tokens");
        ax_jw_arr_begin(w);
        for (size_t t = 0; t < cn->n_tokens; t++) ax_jw_int(w, cn->tokens[t]);
        ax_jw_arr_end(w);
        ax_jw_key(w, "prefix_tokens"), ax_jw_int(w, cn->prefix_tokens);
        ax_jw_key(w, "inserted");
        ax_jw_arr_begin(w);
        for (int k = 0; k < cn->repeats; k++, at++) {
            ax_jw_obj_begin(w);
            ax_jw_key(w, "doc"), ax_jw_uint(w, pl->ins[at].out_doc);
            ax_jw_key(w, "token_pos"), ax_jw_uint(w, pl->ins[at].pos);
            ax_jw_obj_end(w);
        }
        ax_jw_arr_end(w);
        ax_jw_obj_end(w);
    }
    ax_jw_arr_end(w);
    ax_jw_key(w, "references");
    ax_jw_arr_begin(w);
    for (long i = 0; i < nr; i++) ax_jw_str(w, refs[i]);
    ax_jw_arr_end(w);
    ax_jw_obj_end(w);
}

/* leading tokens whose bytes lie wholly inside the first prefix_len bytes */
static int count_prefix_tokens(const ax_tokenizer_t *tok, const int32_t *t, size_t n,
                               size_t prefix_len) {
    size_t bytes = 0;
    int k = 0;
    for (; (size_t)k < n; k++) {
        size_t len;
        ax_tokenizer_token_bytes(tok, t[k], &len);
        if (bytes + len > prefix_len) break;
        bytes += len;
    }
    return k;
}

/* ---- boundaries */

static int is_space(uint8_t b) {
    return b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == '\f' || b == '\v';
}

/* 1 if the text of t[0..g) ends a sentence: '.', '!' or '?', then any closing quotes or
 * brackets (looked for over the last few tokens) */
static int ends_sentence(const ax_tokenizer_t *tok, const int32_t *t, size_t g) {
    for (size_t k = g, seen = 0; k > 0 && seen < 4; k--, seen++) {
        size_t len;
        const uint8_t *b = ax_tokenizer_token_bytes(tok, t[k - 1], &len);
        while (len && strchr("\"')]", b[len - 1]) && b[len - 1]) len--;
        if (len) return b[len - 1] == '.' || b[len - 1] == '!' || b[len - 1] == '?';
    }
    return 0;
}

/* 1 if boundary g of document d (n tokens, end-of-text last) may take canary k: a sentence
 * boundary followed by whitespace, or the document's end; not inside a copy already there; and
 * with --within, every copy of the document still ending within it */
static int boundary_ok(const planter *pl, const doc_state *d, size_t g, long k) {
    const int32_t *t = d->t;
    size_t n = d->n, nk = pl->cs[k].n_tokens;
    if (g + 1 > n) return 0;
    for (int j = 0; j < d->n_ins; j++) {
        const insertion *x = &pl->ins[d->ins[j]];
        size_t xn = pl->cs[x->canary].n_tokens;
        if (x->pos < g && g < x->pos + xn) return 0;
        if (pl->c->within && x->pos >= g && x->pos + xn + nk > (uint64_t)pl->c->within) return 0;
    }
    if (pl->c->within && g + nk > (uint64_t)pl->c->within) return 0;
    if (g == n - 1) return 1; /* the document's end */
    size_t len;
    const uint8_t *b = ax_tokenizer_token_bytes(pl->tok, t[g], &len);
    return g > 0 && len && is_space(b[0]) && ends_sentence(pl->tok, t, g);
}

/* 1 (in *ok) if decoding the document's text, putting the canary's text at boundary g and
 * encoding gives the document's tokens with the canary's tokens at g */
static ax_status round_trips(const planter *pl, const doc_state *d, size_t g, long k,
                             const char *text, int *ok) {
    const canary *cn = &pl->cs[k];
    uint8_t *all = NULL, *head = NULL;
    char *mixed = NULL;
    int32_t *got = NULL;
    size_t n_all, n_head, n_got, lt = strlen(text);
    ax_status st = ax_tokenizer_decode(pl->tok, d->t, d->n - 1, &all, &n_all);
    if (st == AX_OK) st = ax_tokenizer_decode(pl->tok, d->t, g, &head, &n_head);
    if (st == AX_OK && !(mixed = malloc(n_all + lt + 1)))
        st = ax_errorf(AX_ERR_NOMEM, "out of memory planting canaries");
    if (st == AX_OK) {
        memcpy(mixed, all, n_head);
        memcpy(mixed + n_head, text, lt);
        memcpy(mixed + n_head + lt, all + n_head, n_all - n_head);
        st = ax_tok_encoder_encode(pl->enc, (const uint8_t *)mixed, n_all + lt, &got, &n_got);
    }
    *ok = st == AX_OK && n_head <= n_all && n_got == d->n - 1 + cn->n_tokens &&
          !memcmp(got, d->t, sizeof *got * g) &&
          !memcmp(got + g, cn->tokens, sizeof *got * cn->n_tokens) &&
          !memcmp(got + g + cn->n_tokens, d->t + g, sizeof *got * (d->n - 1 - g));
    free(all), free(head), free(mixed), free(got);
    return st;
}

/* 1 (in *ok) if decoding t[0..n) and encoding the text gives t[0..n) back */
static ax_status reencodes(const planter *pl, const int32_t *t, size_t n, int *ok) {
    uint8_t *text = NULL;
    int32_t *got = NULL;
    size_t n_text, n_got;
    ax_status st = ax_tokenizer_decode(pl->tok, t, n, &text, &n_text);
    if (st == AX_OK) st = ax_tok_encoder_encode(pl->enc, text, n_text, &got, &n_got);
    *ok = st == AX_OK && n_got == n && !memcmp(got, t, sizeof *got * n);
    free(text), free(got);
    return st;
}

/* the state of input document i, made on first use */
static ax_status doc_of(planter *pl, uint64_t i, doc_state **out) {
    if (!pl->docs[i]) {
        const uint64_t *off = ax_axd_doc_offsets(pl->ds);
        doc_state *d = calloc(1, sizeof *d);
        if (!d || !(d->t = malloc(sizeof *d->t * (off[i + 1] - off[i])))) {
            free(d);
            return ax_errorf(AX_ERR_NOMEM, "out of memory planting canaries");
        }
        d->n = off[i + 1] - off[i];
        ax_axd_tokens(pl->ds, off[i], d->n, d->t);
        pl->docs[i] = d;
        /* a document whose text does not re-encode to its tokens (another tokenizer's output,
         * a cut chunk; end-of-text excluded) takes no copy at any boundary: skipped at once */
        if (d->n) AX_CHECK(reencodes(pl, d->t, d->n - 1, &d->reencodes));
    }
    *out = pl->docs[i];
    return AX_OK;
}

/* puts copy x of canary k at boundary g of d, moving the copies at or after g */
static ax_status place(planter *pl, doc_state *d, size_t g, long x) {
    const canary *cn = &pl->cs[pl->ins[x].canary];
    int32_t *t = realloc(d->t, sizeof *t * (d->n + cn->n_tokens));
    long *ins = realloc(d->ins, sizeof *ins * (size_t)(d->n_ins + 1));
    if (t) d->t = t;
    if (ins) d->ins = ins;
    if (!t || !ins) return ax_errorf(AX_ERR_NOMEM, "out of memory planting canaries");
    memmove(d->t + g + cn->n_tokens, d->t + g, sizeof *t * (d->n - g));
    memcpy(d->t + g, cn->tokens, sizeof *t * cn->n_tokens);
    d->n += cn->n_tokens;
    for (int j = 0; j < d->n_ins; j++)
        if (pl->ins[d->ins[j]].pos >= g) pl->ins[d->ins[j]].pos += cn->n_tokens;
    d->ins[d->n_ins++] = x;
    pl->ins[x].pos = g;
    return AX_OK;
}

/* Copy x (of canary k) between sentences: documents drawn until one has a boundary that takes
 * the canary and round-trips; the boundary drawn uniformly among those left. */
static ax_status plant_between_sentences(planter *pl, long x, const char *text) {
    long k = pl->ins[x].canary;
    uint64_t nd = ax_axd_n_docs(pl->ds);
    size_t *cand = NULL, cap = 0;
    ax_status st = AX_OK;
    for (uint64_t try = 0; try < MAX_TRIES; try++) {
        uint64_t key = (uint64_t)x * MAX_TRIES + try;
        uint64_t i = ax_rng_below(pl->c->seed, 3, key, nd);
        doc_state *d = NULL;
        AX_CHECK_GOTO(doc_of(pl, i, &d), out);
        if (!d->reencodes) {
            pl->redrawn++;
            continue;
        }
        if (d->n > cap) {
            free(cand);
            if (!(cand = malloc(sizeof *cand * (cap = d->n)))) {
                st = ax_errorf(AX_ERR_NOMEM, "out of memory planting canaries");
                goto out;
            }
        }
        size_t nb = 0;
        for (size_t g = 0; g < d->n; g++)
            if (boundary_ok(pl, d, g, k)) cand[nb++] = g;
        for (uint64_t draw = 0; nb; draw++) { /* refused boundaries leave the list */
            size_t pick = (size_t)ax_rng_below(pl->c->seed, 4, key * 64 + draw % 64, nb);
            int ok;
            AX_CHECK_GOTO(round_trips(pl, d, cand[pick], k, text, &ok), out);
            if (ok) {
                pl->ins[x].doc = i;
                st = place(pl, d, cand[pick], x);
                goto out;
            }
            cand[pick] = cand[--nb];
            pl->redrawn++;
        }
        pl->redrawn++;
    }
    st = ax_errorf(AX_ERR_ARG,
                   "could not plant a copy of canary %ld: %d documents of %s drawn had no "
                   "sentence boundary (after . ! or ?, before whitespace) nor an end%s where "
                   "decoding and re-encoding keeps every token; pass --as-documents",
                   k, MAX_TRIES, pl->c->input, pl->c->within ? " within --within tokens" : "");
out:
    free(cand);
    return st;
}

/* Copy x as a document of its own: its text must decode and re-encode to its tokens. */
static ax_status plant_as_document(planter *pl, long x) {
    const canary *cn = &pl->cs[pl->ins[x].canary];
    int ok;
    ax_status st = reencodes(pl, cn->tokens, cn->n_tokens, &ok);
    if (st == AX_OK && !ok)
        st = ax_errorf(AX_ERR_ARG,
                       "canary %ld's text does not decode and re-encode to its tokens with %s; "
                       "change --format",
                       pl->ins[x].canary, pl->c->tokenizer);
    pl->ins[x].doc = ax_rng_below(pl->c->seed, 3, (uint64_t)x, ax_axd_n_docs(pl->ds) + 1);
    pl->ins[x].pos = 0;
    return st;
}

/* insertion order for --as-documents: by the gap, then number (qsort_r: the array is the
 * context) */
static int cmp_gap(const void *a, const void *b, void *ctx) {
    const insertion *all = ctx;
    long i = *(const long *)a, j = *(const long *)b;
    if (all[i].doc != all[j].doc) return all[i].doc < all[j].doc ? -1 : 1;
    return i < j ? -1 : i > j;
}

/* the output dataset: every input document (planted in or not), and --as-documents copies
 * before the input document they were drawn before; out_doc of every copy */
static ax_status write_dataset(planter *pl, ax_axd_writer_t *w, ax_canary_result *r) {
    uint64_t nd = ax_axd_n_docs(pl->ds), od = 0;
    const uint64_t *off = ax_axd_doc_offsets(pl->ds);
    int32_t eot = (int32_t)ax_axd_eot(pl->ds), *buf = NULL;
    long *order = NULL, at = 0;
    size_t cap = 0;
    ax_status st = AX_OK;
    if (pl->c->as_documents) {
        if (!(order = malloc(sizeof *order * (size_t)pl->n_ins)))
            return ax_errorf(AX_ERR_NOMEM, "out of memory planting canaries");
        for (long i = 0; i < pl->n_ins; i++) order[i] = i;
        qsort_r(order, (size_t)pl->n_ins, sizeof *order, cmp_gap, pl->ins);
    }
    for (uint64_t i = 0; i <= nd && st == AX_OK; i++) {
        for (; order && at < pl->n_ins && pl->ins[order[at]].doc == i; at++, od++) {
            insertion *x = &pl->ins[order[at]];
            const canary *cn = &pl->cs[x->canary];
            if (cn->n_tokens + 1 > cap) {
                free(buf);
                if (!(buf = malloc(sizeof *buf * (cap = cn->n_tokens + 1)))) goto oom;
            }
            memcpy(buf, cn->tokens, sizeof *buf * cn->n_tokens);
            buf[cn->n_tokens] = eot;
            AX_CHECK_GOTO(ax_axd_writer_add_doc(w, buf, cn->n_tokens + 1), out);
            x->out_doc = od;
            r->tokens_out += cn->n_tokens + 1, r->tokens_added += cn->n_tokens + 1;
        }
        if (i == nd) break;
        const doc_state *d = pl->docs ? pl->docs[i] : NULL;
        if (d) {
            AX_CHECK_GOTO(ax_axd_writer_add_doc(w, d->t, d->n), out);
            for (int j = 0; j < d->n_ins; j++) pl->ins[d->ins[j]].out_doc = od;
            r->tokens_out += d->n, r->tokens_added += d->n - (off[i + 1] - off[i]);
        } else {
            uint64_t n = off[i + 1] - off[i];
            if (n > cap) {
                free(buf);
                if (!(buf = malloc(sizeof *buf * (cap = n)))) goto oom;
            }
            ax_axd_tokens(pl->ds, off[i], n, buf);
            AX_CHECK_GOTO(ax_axd_writer_add_doc(w, buf, n), out);
            r->tokens_out += n;
        }
        od++;
    }
    r->docs = od;
    goto out;
oom:
    st = ax_errorf(AX_ERR_NOMEM, "out of memory planting canaries");
out:
    free(buf), free(order);
    return st;
}

/* the canaries' secrets (distinct), texts and tokens; the references */
static ax_status draw_secrets(planter *pl, const ax_canary_format *f, const char *prefix, long nc,
                              ax_keyset *set, char **refs, long want_refs, int complete, long *nr) {
    const ax_canary_config *c = pl->c;
    char s[AX_CANARY_MAX_TEXT], text[3 * AX_CANARY_MAX_TEXT];
    uint64_t draws = 0;
    for (long i = 0; i < nc; i++) {
        do {
            if (draws > 64 * (uint64_t)nc + 100000)
                return ax_errorf(AX_ERR_ARG,
                                 "--format \"%s\": could not draw %ld distinct secrets; widen "
                                 "the placeholders",
                                 c->format, nc);
            ax_canary_secret_random(f, c->seed, 1, draws++, s);
        } while (!ax_keyset_add(set, skey(s)));
        canary *cn = &pl->cs[i];
        cn->repeats = c->repeats[i / c->per_repeat];
        if (!(cn->secret = strdup(s))) return ax_errorf(AX_ERR_NOMEM, "out of memory");
        snprintf(text, sizeof text, "%s%s%s", pl->lead, prefix, s);
        AX_CHECK(ax_tok_encoder_encode(pl->enc, (const uint8_t *)text, strlen(text), &cn->tokens,
                                       &cn->n_tokens));
        cn->prefix_tokens = count_prefix_tokens(pl->tok, cn->tokens, cn->n_tokens,
                                                strlen(pl->lead) + strlen(prefix));
    }
    if (complete) {
        for (uint64_t i = 0; i < (uint64_t)f->space; i++) {
            ax_canary_secret_nth(f, i, s);
            if (ax_keyset_has(set, skey(s))) continue;
            if (!(refs[(*nr)++] = strdup(s))) return ax_errorf(AX_ERR_NOMEM, "out of memory");
        }
    } else {
        for (draws = 0; *nr < want_refs; draws++) {
            ax_canary_secret_random(f, c->seed, 2, draws, s);
            if (!ax_keyset_add(set, skey(s))) continue;
            if (!(refs[(*nr)++] = strdup(s))) return ax_errorf(AX_ERR_NOMEM, "out of memory");
        }
    }
    return AX_OK;
}

ax_status ax_data_canaries(const ax_canary_config *c, ax_canary_result *r) {
    memset(r, 0, sizeof *r);
    ax_canary_format f;
    AX_CHECK(ax_canary_format_parse(c->format, &f));
    AX_CHECK(check_config(c));
    ax_status st = AX_OK;
    ax_tokenizer_t *tok = NULL;
    ax_axd_t *ds = NULL, *written = NULL;
    ax_axd_writer_t *w = NULL;
    char **refs = NULL;
    long nc = (long)c->n_repeats * c->per_repeat, nr = 0, n_ins = 0;
    ax_keyset set = {0};
    planter pl = {.c = c, .lead = c->as_documents ? "" : " "};
    ax_jw jw;
    ax_jw_init(&jw);
    char prefix[AX_CANARY_MAX_TEXT], text[3 * AX_CANARY_MAX_TEXT];
    int published = 0;
    uint64_t nd = 0;
    ax_canary_prefix(&f, prefix);
    r->space = f.space;
    if ((double)nc > f.space) {
        st = ax_errorf(AX_ERR_ARG,
                       "--format \"%s\" forms %.0f secrets, fewer than the %ld canaries "
                       "(--repeats x --per-repeat); widen the placeholders",
                       c->format, f.space, nc);
        goto fail;
    }
    /* references: all the rest of a small space (exact enumeration), else a random sample */
    double rest = f.space - (double)nc;
    int complete = rest <= (double)c->references;
    long want_refs = complete ? (long)rest : c->references;
    AX_CHECK_GOTO(ax_tokenizer_load(c->tokenizer, &tok), fail);
    AX_CHECK_GOTO(ax_axd_open(c->input, AX_AXD_VERIFY, &ds), fail);
    AX_CHECK_GOTO(ax_axd_check_tokenizer(ds, tok, c->tokenizer), fail);
    AX_CHECK_GOTO(ax_tok_encoder_create(tok, 1, &pl.enc), fail);
    pl.tok = tok, pl.ds = ds;
    nd = ax_axd_n_docs(ds);
    if (!nd) {
        st = ax_errorf(AX_ERR_ARG, "%s has no documents to plant canaries in", c->input);
        goto fail;
    }
    ax_keyset_init(&set, ax_hash_slots((uint64_t)(nc + want_refs)));
    pl.cs = calloc((size_t)nc, sizeof *pl.cs);
    refs = calloc((size_t)(want_refs ? want_refs : 1), sizeof *refs);
    if (!set.slot || !pl.cs || !refs) goto oom;
    AX_CHECK_GOTO(draw_secrets(&pl, &f, prefix, nc, &set, refs, want_refs, complete, &nr), fail);
    for (long i = 0; i < nc; i++) {
        n_ins += pl.cs[i].repeats;
        if (c->within && pl.cs[i].n_tokens > (size_t)c->within) {
            st = ax_errorf(AX_ERR_ARG,
                           "--within %ld: canary %ld is %zu tokens, more than fit; raise --within "
                           "(the training --seq-len) or shorten --format",
                           c->within, i, pl.cs[i].n_tokens);
            goto fail;
        }
    }
    pl.ins = calloc((size_t)n_ins, sizeof *pl.ins);
    if (!c->as_documents) pl.docs = calloc((size_t)nd, sizeof *pl.docs);
    if (!pl.ins || (!c->as_documents && !pl.docs)) goto oom;
    pl.n_ins = n_ins;
    long x = 0; /* the copies, canary by canary */
    for (long i = 0; i < nc; i++) {
        snprintf(text, sizeof text, "%s%s%s", pl.lead, prefix, pl.cs[i].secret);
        for (int rep = 0; rep < pl.cs[i].repeats; rep++, x++) {
            pl.ins[x].canary = i;
            if (c->as_documents)
                AX_CHECK_GOTO(plant_as_document(&pl, x), fail);
            else
                AX_CHECK_GOTO(plant_between_sentences(&pl, x, text), fail);
        }
    }
    AX_CHECK_GOTO(ax_axd_writer_create(c->out, ax_axd_vocab_size(ds), &w), fail);
    ax_axd_writer_set_tokenizer(w, ax_axd_tokenizer_checksum(ds));
    AX_CHECK_GOTO(ax_axd_writer_set_eot(w, ax_axd_eot(ds)), fail); /* an imported set's own */
    AX_CHECK_GOTO(write_dataset(&pl, w, r), fail);
    /* the dataset published, its identity read back into the secrets, then the secrets; a
     * dataset whose secrets could not be written is removed: it cannot be scanned */
    st = ax_axd_writer_close(w);
    w = NULL;
    if (st != AX_OK) goto fail;
    published = 1;
    AX_CHECK_GOTO(ax_axd_open(c->out, AX_AXD_HEADER_ONLY, &written), fail);
    secrets_json(&jw, &pl, &f, prefix, nc, refs, nr, complete, written);
    const char *js = ax_jw_text(&jw);
    if (!js) goto oom;
    AX_CHECK_GOTO(ax_write_text_atomic(c->secrets, js, 1), fail);
    r->canaries = nc;
    r->references = nr;
    r->references_complete = complete;
    r->insertions = (uint64_t)n_ins;
    r->redrawn = pl.redrawn;
    goto out;
oom:
    st = ax_errorf(AX_ERR_NOMEM, "out of memory planting canaries in %s", c->input);
fail:
    ax_axd_writer_abort(w);
    if (published) remove(c->out);
out:
    ax_jw_free(&jw);
    for (long i = 0; pl.cs && i < nc; i++) {
        free(pl.cs[i].secret);
        free(pl.cs[i].tokens);
    }
    for (uint64_t i = 0; pl.docs && i < nd; i++)
        if (pl.docs[i]) free(pl.docs[i]->t), free(pl.docs[i]->ins), free(pl.docs[i]);
    for (long i = 0; refs && i < nr; i++) free(refs[i]);
    free(pl.cs), free(pl.ins), free(pl.docs), free(refs), free(set.slot);
    ax_tok_encoder_free(pl.enc);
    ax_axd_free(written);
    ax_axd_free(ds);
    ax_tokenizer_free(tok);
    return st;
}
