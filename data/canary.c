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

typedef struct {
    uint64_t *slot, mask;
} sset;

static uint64_t skey(const char *s) {
    uint64_t h = XXH3_64bits(s, strlen(s));
    return h ? h : 1;
}

/* 1 if added, 0 if already there (by 64-bit hash: a collision only skips a fresh string) */
static int sset_add(sset *s, const char *str) {
    uint64_t k = skey(str), i = k & s->mask;
    while (s->slot[i]) {
        if (s->slot[i] == k) return 0;
        i = (i + 1) & s->mask;
    }
    s->slot[i] = k;
    return 1;
}

static int sset_has(const sset *s, const char *str) {
    uint64_t k = skey(str);
    for (uint64_t i = k & s->mask; s->slot[i]; i = (i + 1) & s->mask)
        if (s->slot[i] == k) return 1;
    return 0;
}

/* ---------------------------------------------------------------- planting */

typedef struct {
    char *secret;
    int repeats;
    int32_t *tokens;
    size_t n_tokens;
    int prefix_tokens;
} canary;

typedef struct {
    uint64_t doc, gap, out_pos;
    long canary;
} insertion;

/* insertion order: by document, gap, then number (qsort_r: the array is the context) */
static int cmp_ins(const void *a, const void *b, void *ctx) {
    const insertion *all = ctx;
    long i = *(const long *)a, j = *(const long *)b;
    const insertion *x = &all[i], *y = &all[j];
    if (x->doc != y->doc) return x->doc < y->doc ? -1 : 1;
    if (x->gap != y->gap) return x->gap < y->gap ? -1 : 1;
    return i < j ? -1 : i > j;
}

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
    if (ax_data_same_file(c->input, c->out) || ax_data_same_file(c->input, c->secrets))
        return ax_errorf(AX_ERR_ARG, "--out/--secrets must not be the input %s; name new files",
                         c->input);
    if (ax_data_same_file(c->out, c->secrets))
        return ax_errorf(AX_ERR_ARG, "--out and --secrets are the same file (%s)", c->out);
    return AX_OK;
}

/* the secrets file's JSON (see canary.h) */
static void secrets_json(ax_jw *w, const ax_canary_config *c, const ax_canary_format *f,
                         const char *prefix, const canary *cs, long nc, const insertion *ins,
                         char **refs, long nr, int complete) {
    ax_jw_obj_begin(w);
    ax_jw_key(w, "version");
    ax_jw_int(w, 1);
    ax_jw_key(w, "format");
    ax_jw_str(w, c->format);
    ax_jw_key(w, "space");
    ax_jw_num(w, f->space);
    ax_jw_key(w, "seed");
    ax_jw_uint(w, c->seed);
    ax_jw_key(w, "tokenizer");
    ax_jw_str(w, c->tokenizer);
    ax_jw_key(w, "dataset");
    ax_jw_str(w, c->out);
    ax_jw_key(w, "references_complete");
    ax_jw_bool(w, complete);
    ax_jw_key(w, "canaries");
    ax_jw_arr_begin(w);
    long at = 0; /* insertions are numbered canary by canary */
    for (long i = 0; i < nc; i++) {
        ax_jw_obj_begin(w);
        ax_jw_key(w, "id");
        ax_jw_int(w, i);
        ax_jw_key(w, "prefix");
        ax_jw_str(w, prefix);
        ax_jw_key(w, "secret");
        ax_jw_str(w, cs[i].secret);
        ax_jw_key(w, "repeats");
        ax_jw_int(w, cs[i].repeats);
        ax_jw_key(w, "tokens");
        ax_jw_arr_begin(w);
        for (size_t t = 0; t < cs[i].n_tokens; t++) ax_jw_int(w, cs[i].tokens[t]);
        ax_jw_arr_end(w);
        ax_jw_key(w, "prefix_tokens");
        ax_jw_int(w, cs[i].prefix_tokens);
        ax_jw_key(w, "inserted");
        ax_jw_arr_begin(w);
        for (int k = 0; k < cs[i].repeats; k++, at++) {
            ax_jw_obj_begin(w);
            ax_jw_key(w, "doc");
            ax_jw_uint(w, ins[at].doc);
            ax_jw_key(w, "token_pos");
            ax_jw_uint(w, ins[at].out_pos);
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

/* 1 if the token's first byte continues a UTF-8 character (10xxxxxx) */
static int starts_mid_char(const ax_tokenizer_t *tok, int32_t id) {
    size_t len;
    const uint8_t *b = ax_tokenizer_token_bytes(tok, id, &len);
    return len && (b[0] & 0xC0) == 0x80;
}

/* leading tokens whose bytes lie wholly inside the first prefix_len bytes */
static int count_prefix_tokens(const ax_tokenizer_t *tok, const int32_t *t, size_t n,
                               int prefix_len) {
    size_t bytes = 0;
    int k = 0;
    for (; (size_t)k < n; k++) {
        size_t len;
        ax_tokenizer_token_bytes(tok, t[k], &len);
        if (bytes + len > (size_t)prefix_len) break;
        bytes += len;
    }
    return k;
}

ax_status ax_data_canaries(const ax_canary_config *c, ax_canary_result *r) {
    memset(r, 0, sizeof *r);
    ax_canary_format f;
    AX_CHECK(ax_canary_format_parse(c->format, &f));
    AX_CHECK(check_config(c));
    ax_status st = AX_OK;
    ax_tokenizer_t *tok = NULL;
    ax_axd_t *ds = NULL;
    ax_axd_writer_t *w = NULL;
    canary *cs = NULL;
    char **refs = NULL;
    insertion *ins = NULL;
    long *order = NULL, nc = (long)c->n_repeats * c->per_repeat, nr = 0, n_ins = 0;
    int32_t *in = NULL, *outb = NULL;
    sset set = {0};
    ax_jw jw;
    ax_jw_init(&jw);
    char tmp[4096] = "", prefix[AX_CANARY_MAX_TEXT], s[AX_CANARY_MAX_TEXT],
         text[2 * AX_CANARY_MAX_TEXT];
    int fd = -1;
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
    const uint64_t nd = ax_axd_n_docs(ds), *off = ax_axd_doc_offsets(ds);
    if (!nd) {
        st = ax_errorf(AX_ERR_ARG, "%s has no documents to plant canaries in", c->input);
        goto fail;
    }
    uint64_t slots = 16;
    while (slots < 2 * (uint64_t)(nc + want_refs)) slots *= 2;
    set.slot = calloc((size_t)slots, sizeof *set.slot);
    set.mask = slots - 1;
    cs = calloc((size_t)nc, sizeof *cs);
    refs = calloc((size_t)(want_refs ? want_refs : 1), sizeof *refs);
    if (!set.slot || !cs || !refs) goto oom;
    /* the canaries: repeat counts in the given order, per_repeat each, distinct secrets */
    uint64_t draws = 0;
    for (long i = 0; i < nc; i++) {
        do {
            if (draws > 64 * (uint64_t)nc + 100000) {
                st = ax_errorf(AX_ERR_ARG,
                               "--format \"%s\": could not draw %ld distinct secrets; widen the "
                               "placeholders",
                               c->format, nc);
                goto fail;
            }
            ax_canary_secret_random(&f, c->seed, 1, draws++, s);
        } while (!sset_add(&set, s));
        cs[i].repeats = c->repeats[i / c->per_repeat];
        if (!(cs[i].secret = strdup(s))) goto oom;
        snprintf(text, sizeof text, "%s%s", prefix, s);
        AX_CHECK_GOTO(ax_tokenizer_encode(tok, (const uint8_t *)text, strlen(text), &cs[i].tokens,
                                          &cs[i].n_tokens),
                      fail);
        cs[i].prefix_tokens = count_prefix_tokens(tok, cs[i].tokens, cs[i].n_tokens, f.prefix_len);
        n_ins += cs[i].repeats;
    }
    if (complete) {
        for (uint64_t i = 0; i < (uint64_t)f.space; i++) {
            ax_canary_secret_nth(&f, i, s);
            if (sset_has(&set, s)) continue;
            if (!(refs[nr++] = strdup(s))) goto oom;
        }
    } else {
        for (draws = 0; nr < want_refs; draws++) {
            ax_canary_secret_random(&f, c->seed, 2, draws, s);
            if (!sset_add(&set, s)) continue;
            if (!(refs[nr++] = strdup(s))) goto oom;
        }
    }
    /* the insertions: document and gap drawn per insertion, then applied in document order */
    ins = malloc((size_t)n_ins * sizeof *ins);
    order = malloc((size_t)n_ins * sizeof *order);
    if (!ins || !order) goto oom;
    long k = 0;
    for (long i = 0; i < nc; i++)
        for (int rep = 0; rep < cs[i].repeats; rep++, k++) {
            uint64_t d = ax_rng_below(c->seed, 3, (uint64_t)k, nd);
            uint64_t len = off[d + 1] - off[d]; /* gaps 0..len-1: before the end-of-text */
            uint64_t g = ax_rng_below(c->seed, 4, (uint64_t)k, len ? len : 1);
            /* never between the bytes of one UTF-8 character: move past a token that starts
             * with a continuation byte (the end-of-text, last, has no bytes) */
            while (g + 1 < len && starts_mid_char(tok, (int32_t)ax_axd_token(ds, off[d] + g))) g++;
            ins[k] = (insertion){d, g, 0, i};
            order[k] = k;
        }
    qsort_r(order, (size_t)n_ins, sizeof *order, cmp_ins, ins);
    AX_CHECK_GOTO(ax_axd_writer_create(c->out, ax_axd_vocab_size(ds), &w), fail);
    ax_axd_writer_set_tokenizer(w, ax_axd_tokenizer_checksum(ds));
    AX_CHECK_GOTO(ax_axd_writer_set_eot(w, ax_axd_eot(ds)), fail); /* an imported set's own */
    size_t in_cap = 0, out_cap = 0;
    long at = 0;
    for (uint64_t d = 0; d < nd; d++) {
        uint64_t len = off[d + 1] - off[d], grow = len;
        for (long j = at; j < n_ins && ins[order[j]].doc == d; j++)
            grow += cs[ins[order[j]].canary].n_tokens;
        if (len > in_cap || grow > out_cap) {
            free(in);
            free(outb);
            in_cap = len;
            out_cap = grow;
            in = malloc((in_cap ? in_cap : 1) * sizeof *in);
            outb = malloc((out_cap ? out_cap : 1) * sizeof *outb);
            if (!in || !outb) goto oom;
        }
        ax_axd_tokens(ds, off[d], len, in);
        size_t o = 0;
        for (uint64_t g = 0; g <= len; g++) {
            for (; at < n_ins && ins[order[at]].doc == d && ins[order[at]].gap == g; at++) {
                insertion *x = &ins[order[at]];
                const canary *cn = &cs[x->canary];
                x->out_pos = o;
                memcpy(outb + o, cn->tokens, cn->n_tokens * sizeof *outb);
                o += cn->n_tokens;
                r->tokens_added += cn->n_tokens;
            }
            if (g < len) outb[o++] = in[g];
        }
        AX_CHECK_GOTO(ax_axd_writer_add_doc(w, outb, o), fail);
        r->tokens_out += o;
    }
    /* the secrets to a private temporary, then the dataset published, then the secrets */
    secrets_json(&jw, c, &f, prefix, cs, nc, ins, refs, nr, complete);
    const char *js = ax_jw_text(&jw);
    if (!js) goto oom;
    AX_CHECK_GOTO(ax_create_temp(c->secrets, 1, tmp, sizeof tmp, &fd), fail);
    AX_CHECK_GOTO(ax_write_all(fd, js, strlen(js), tmp), fail);
    AX_CHECK_GOTO(ax_write_all(fd, "\n", 1, tmp), fail);
    if (fsync(fd) != 0) {
        st = ax_errorf(AX_ERR_IO, "%s: fsync failed: %s", tmp, strerror(errno));
        goto fail;
    }
    close(fd);
    fd = -1;
    st = ax_axd_writer_close(w);
    w = NULL;
    if (st != AX_OK) goto fail;
    st = ax_rename_durable(tmp, c->secrets);
    if (st != AX_OK) {
        remove(c->out); /* a dataset whose secrets are lost cannot be scanned */
        goto fail;
    }
    tmp[0] = 0;
    r->canaries = nc;
    r->references = nr;
    r->references_complete = complete;
    r->insertions = (uint64_t)n_ins;
    r->docs = nd;
    goto out;
oom:
    st = ax_errorf(AX_ERR_NOMEM, "out of memory planting canaries in %s", c->input);
fail:
    ax_axd_writer_abort(w);
    if (fd >= 0) close(fd);
    if (tmp[0]) unlink(tmp);
out:
    ax_jw_free(&jw);
    for (long i = 0; cs && i < nc; i++) {
        free(cs[i].secret);
        free(cs[i].tokens);
    }
    for (long i = 0; refs && i < nr; i++) free(refs[i]);
    free(cs);
    free(refs);
    free(ins);
    free(order);
    free(in);
    free(outb);
    free(set.slot);
    ax_axd_free(ds);
    ax_tokenizer_free(tok);
    return st;
}
