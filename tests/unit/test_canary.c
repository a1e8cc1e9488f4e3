/* `axmem data canaries` (data/canary.h): the format mini-language, and a planted dataset in
 * which each canary's tokens occur exactly `repeats` times (counted by brute force), the
 * references never, removing the recorded insertions gives back the input, and both outputs
 * are mode 0600. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data/axd.h"
#include "data/canary.h"
#include "data/encode.h"
#include "data/tokenizer.h"
#include "lib/core/fsutil.h"
#include "lib/core/json.h"
#include "test_data_util.h"

static void quiet(void) {
    td_quiet();
}
TestSuite(canary, .init = quiet);

Test(canary, format_parse_and_render) {
    ax_canary_format f;
    char s[AX_CANARY_MAX_TEXT];
    cr_assert_eq(ax_canary_format_parse("x {{y}} {h2}-{a1}.", &f), AX_OK, "%s", ax_error_msg());
    ax_canary_prefix(&f, s);
    cr_assert_str_eq(s, "x {y} ");
    cr_assert_float_eq(f.space, 256.0 * 26, 1e-9);
    ax_canary_secret_nth(&f, 0, s);
    cr_assert_str_eq(s, "00-a.");
    ax_canary_secret_nth(&f, 27, s); /* last character fastest: 27 = 1 * 26 + 1 */
    cr_assert_str_eq(s, "01-b.");
    ax_canary_secret_nth(&f, 256 * 26 - 1, s);
    cr_assert_str_eq(s, "ff-z.");
    cr_assert_eq(ax_canary_format_parse("{d3}", &f), AX_OK);
    ax_canary_prefix(&f, s);
    cr_assert_str_eq(s, "");
    cr_assert_float_eq(f.space, 1000, 1e-9);
    /* random draws use the alphabet and are a function of (seed, stream, index) */
    char t[AX_CANARY_MAX_TEXT];
    cr_assert_eq(ax_canary_format_parse("pin {d6}", &f), AX_OK);
    ax_canary_secret_random(&f, 5, 1, 9, s);
    ax_canary_secret_random(&f, 5, 1, 9, t);
    cr_assert_str_eq(s, t);
    cr_assert_eq(strlen(s), 6);
    cr_assert_eq(strspn(s, "0123456789"), 6);
    const char *bad[] = {"{d0}",  "{x3}", "no placeholder", "a {d3", "b } c",
                         "{d65}", "{d}",  "{d06}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ax_error_clear();
        cr_assert_eq(ax_canary_format_parse(bad[i], &f), AX_ERR_ARG, "'%s' accepted", bad[i]);
        cr_assert(strstr(ax_error_msg(), "--format"), "'%s': %s", bad[i], ax_error_msg());
    }
    ax_error_clear();
}

/* ---- a small dataset with letters only, so digit secrets cannot occur by chance ---- */

typedef struct {
    char txt[256], tok[256], in[256], out[256], sec[256];
} files;

static const char *PLAIN[] = {"alpha", "beta",  "gamma", "delta", "river", "stone",
                              "light", "north", "quiet", "field", "my",    "is"};

/* 30 one-line documents of words[n] (12 words), a tokenizer of `vocab` ids trained on them */
static void make_dataset_of(files *p, const char *tag, const char *const *words, int vocab) {
    char b[64];
#define TMP(field, ext)                                                                            \
    snprintf(b, sizeof b, "%s.%s", tag, ext);                                                      \
    td_tmp(p->field, sizeof p->field, b)
    TMP(txt, "txt");
    TMP(tok, "tok");
    TMP(in, "in.axd");
    TMP(out, "out.axd");
    TMP(sec, "secrets.json");
#undef TMP
    char text[1 << 15];
    size_t len = 0;
    for (int d = 0; d < 30; d++) {
        int nw = 3 + (d * 7) % 25;
        for (int w = 0; w < nw; w++)
            len += (size_t)snprintf(text + len, sizeof text - len, "%s%s", w ? " " : "",
                                    words[(d * 31 + w * 17) % 12]);
        text[len++] = '\n';
    }
    cr_assert(td_write(p->txt, text, len));
    const char *in[] = {p->txt};
    ax_data_tokenizer_result tr;
    cr_assert_eq(ax_data_tokenizer_train(in, 1, 1, (uint64_t)vocab, 0, p->tok, &tr), AX_OK, "%s",
                 ax_error_msg());
    ax_data_encode_result er;
    cr_assert_eq(ax_data_encode(p->tok, in, 1, 1, 1, p->in, &er), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(er.docs, 30);
}

static void make_dataset(files *p, const char *tag) {
    make_dataset_of(p, tag, PLAIN, 300);
}

static void rm_files(const files *p) {
    remove(p->txt);
    remove(p->tok);
    remove(p->in);
    remove(p->out);
    remove(p->sec);
}

/* every document of a dataset (int32, with its end-of-text) */
typedef struct {
    uint64_t nd;
    uint64_t *len;
    int32_t **doc;
} docs_t;

static docs_t load_docs(const char *path) {
    ax_axd_t *a;
    cr_assert_eq(ax_axd_open(path, AX_AXD_VERIFY, &a), AX_OK, "%s", ax_error_msg());
    docs_t d = {.nd = ax_axd_n_docs(a)};
    d.len = calloc(d.nd, sizeof *d.len);
    d.doc = calloc(d.nd, sizeof *d.doc);
    const uint64_t *off = ax_axd_doc_offsets(a);
    for (uint64_t i = 0; i < d.nd; i++) {
        d.len[i] = off[i + 1] - off[i];
        d.doc[i] = malloc(d.len[i] * sizeof(int32_t));
        ax_axd_tokens(a, off[i], d.len[i], d.doc[i]);
    }
    ax_axd_free(a);
    return d;
}

static void free_docs(docs_t *d) {
    for (uint64_t i = 0; i < d->nd; i++) free(d->doc[i]);
    free(d->doc);
    free(d->len);
}

/* occurrences of t[n] at any position of any document, by brute force */
static long count_occ(const docs_t *d, const int32_t *t, size_t n) {
    long c = 0;
    for (uint64_t i = 0; i < d->nd; i++)
        for (uint64_t p = 0; p + n <= d->len[i]; p++) c += !memcmp(d->doc[i] + p, t, n * 4);
    return c;
}

static ax_json *load_secrets(const char *path) {
    size_t n;
    char *text = (char *)td_read(path, &n);
    cr_assert(text, "no secrets file %s", path);
    ax_json *j;
    cr_assert_eq(ax_json_parse(text, n, path, &j), AX_OK, "%s", ax_error_msg());
    free(text);
    return j;
}

static const int REPEATS[] = {1, 2, 5};

static ax_canary_config config(const files *p, const char *format, long refs) {
    return (ax_canary_config){.input = p->in,
                              .tokenizer = p->tok,
                              .format = format,
                              .out = p->out,
                              .secrets = p->sec,
                              .repeats = REPEATS,
                              .n_repeats = 3,
                              .per_repeat = 2,
                              .references = refs,
                              .seed = 3};
}

Test(canary, planted_exactly_repeats_times_references_never) {
    files p;
    make_dataset(&p, "plant");
    ax_canary_config c = config(&p, "my PIN is {d4}", 50);
    ax_canary_result r;
    cr_assert_eq(ax_data_canaries(&c, &r), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(r.canaries, 6);
    cr_assert_eq(r.insertions, 2 * (1 + 2 + 5));
    cr_assert_eq(r.references, 50);
    cr_assert(!r.references_complete);
    struct stat st;
    cr_assert_eq(stat(p.out, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0600);
    cr_assert_eq(stat(p.sec, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0600);

    ax_tokenizer_t *tok;
    cr_assert_eq(ax_tokenizer_load(p.tok, &tok), AX_OK);
    docs_t in = load_docs(p.in), out = load_docs(p.out);
    cr_assert_eq(in.nd, out.nd);
    ax_json *j = load_secrets(p.sec);
    cr_assert_eq(ax_json_get(j, "version")->num, 1);
    cr_assert_str_eq(ax_json_get(j, "format")->str, "my PIN is {d4}");
    cr_assert_eq(ax_json_get(j, "space")->num, 10000);
    cr_assert_str_eq(ax_json_get(j, "dataset")->str, p.out);
    const ax_json *cans = ax_json_get(j, "canaries"), *refs = ax_json_get(j, "references");
    cr_assert_eq(cans->n, 6);
    cr_assert_eq(refs->n, 50);
    /* per document, the insertions to take out again: (start, length) */
    uint64_t *cut_pos = calloc(64, sizeof *cut_pos), *cut_doc = calloc(64, sizeof *cut_doc);
    size_t *cut_len = calloc(64, sizeof *cut_len), ncut = 0;
    for (size_t i = 0; i < cans->n; i++) {
        const ax_json *cn = cans->items[i];
        cr_assert_str_eq(ax_json_get(cn, "prefix")->str, "my PIN is ");
        const char *secret = ax_json_get(cn, "secret")->str;
        cr_assert_eq(strlen(secret), 4);
        int repeats = (int)ax_json_get(cn, "repeats")->num;
        cr_assert_eq(repeats, REPEATS[i / 2]);
        /* tokens are the tokenization of prefix + secret */
        char text[64];
        snprintf(text, sizeof text, "my PIN is %s", secret);
        int32_t *want;
        size_t nw;
        cr_assert_eq(ax_tokenizer_encode(tok, (const uint8_t *)text, strlen(text), &want, &nw),
                     AX_OK);
        const ax_json *toks = ax_json_get(cn, "tokens");
        cr_assert_eq(toks->n, nw);
        for (size_t t = 0; t < nw; t++) cr_assert_eq((int32_t)toks->items[t]->num, want[t]);
        /* prefix_tokens: the leading tokens inside "my PIN is " */
        int pt = (int)ax_json_get(cn, "prefix_tokens")->num;
        uint8_t *bytes;
        size_t nb;
        cr_assert_eq(ax_tokenizer_decode(tok, want, (size_t)pt, &bytes, &nb), AX_OK);
        cr_assert(nb <= 10 && !memcmp(bytes, "my PIN is ", nb));
        free(bytes);
        cr_assert_eq(ax_tokenizer_decode(tok, want, (size_t)pt + 1, &bytes, &nb), AX_OK);
        cr_assert(nb > 10, "prefix_tokens %d is not the longest", pt);
        free(bytes);
        /* exactly `repeats` occurrences, at the recorded places */
        cr_assert_eq(count_occ(&out, want, nw), repeats, "canary %zu: %ld occurrences", i,
                     count_occ(&out, want, nw));
        const ax_json *at = ax_json_get(cn, "inserted");
        cr_assert_eq(at->n, (size_t)repeats);
        for (size_t k = 0; k < at->n; k++) {
            uint64_t d = (uint64_t)ax_json_get(at->items[k], "doc")->num,
                     pos = (uint64_t)ax_json_get(at->items[k], "token_pos")->num;
            cr_assert(d < out.nd && pos + nw < out.len[d]); /* before the end-of-text */
            cr_assert(!memcmp(out.doc[d] + pos, want, nw * 4), "canary %zu not at doc %lu pos %lu",
                      i, (unsigned long)d, (unsigned long)pos);
            cut_doc[ncut] = d;
            cut_pos[ncut] = pos;
            cut_len[ncut++] = nw;
        }
        free(want);
    }
    /* references: distinct from each other and the canaries, same format, never in the data */
    for (size_t i = 0; i < refs->n; i++) {
        const char *s = refs->items[i]->str;
        cr_assert(strlen(s) == 4 && strspn(s, "0123456789") == 4, "reference '%s'", s);
        for (size_t k = 0; k < i; k++) cr_assert_str_neq(s, refs->items[k]->str);
        for (size_t k = 0; k < cans->n; k++)
            cr_assert_str_neq(s, ax_json_get(cans->items[k], "secret")->str);
        char text[64];
        snprintf(text, sizeof text, "my PIN is %s", s);
        int32_t *t;
        size_t nt;
        cr_assert_eq(ax_tokenizer_encode(tok, (const uint8_t *)text, strlen(text), &t, &nt), AX_OK);
        cr_assert_eq(count_occ(&out, t, nt), 0, "reference %s found", s);
        free(t);
    }
    /* taking every insertion out again (each document's from the back) gives the input */
    for (uint64_t d = 0; d < out.nd; d++) {
        for (;;) {
            long best = -1;
            for (size_t k = 0; k < ncut; k++)
                if (cut_doc[k] == d && cut_len[k] && (best < 0 || cut_pos[k] > cut_pos[best]))
                    best = (long)k;
            if (best < 0) break;
            memmove(out.doc[d] + cut_pos[best], out.doc[d] + cut_pos[best] + cut_len[best],
                    (out.len[d] - cut_pos[best] - cut_len[best]) * 4);
            out.len[d] -= cut_len[best];
            cut_len[best] = 0;
        }
        cr_assert_eq(out.len[d], in.len[d], "doc %lu", (unsigned long)d);
        cr_assert(!memcmp(out.doc[d], in.doc[d], in.len[d] * 4), "doc %lu differs",
                  (unsigned long)d);
    }
    free(cut_pos);
    free(cut_doc);
    free(cut_len);
    ax_json_free(j);
    free_docs(&in);
    free_docs(&out);
    ax_tokenizer_free(tok);

    /* the same seed writes the same files */
    size_t n1, n2;
    uint8_t *a = td_read(p.out, &n1), *s1 = NULL, *s2 = NULL, *b;
    s1 = td_read(p.sec, &n2);
    cr_assert_eq(ax_data_canaries(&c, &r), AX_OK);
    size_t m1, m2;
    b = td_read(p.out, &m1);
    s2 = td_read(p.sec, &m2);
    cr_assert(n1 == m1 && !memcmp(a, b, n1) && n2 == m2 && !memcmp(s1, s2, n2));
    free(a);
    free(b);
    free(s1);
    free(s2);
    rm_files(&p);
}

Test(canary, small_space_references_are_all_the_rest) {
    files p;
    make_dataset(&p, "small");
    ax_canary_config c = config(&p, "code {d2}", 1000);
    ax_canary_result r;
    cr_assert_eq(ax_data_canaries(&c, &r), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(r.canaries, 6);
    cr_assert_eq(r.references, 94);
    cr_assert(r.references_complete);
    ax_json *j = load_secrets(p.sec);
    cr_assert(ax_json_get(j, "references_complete")->num == 1);
    int seen[100] = {0};
    const ax_json *cans = ax_json_get(j, "canaries"), *refs = ax_json_get(j, "references");
    for (size_t i = 0; i < cans->n; i++) seen[atoi(ax_json_get(cans->items[i], "secret")->str)]++;
    for (size_t i = 0; i < refs->n; i++) seen[atoi(refs->items[i]->str)]++;
    for (int i = 0; i < 100; i++) cr_assert_eq(seen[i], 1, "secret %02d seen %d times", i, seen[i]);
    ax_json_free(j);
    /* a space smaller than the canaries is refused */
    ax_canary_config c1 = config(&p, "{d1}", 0);
    int many[] = {1, 1, 1, 1, 1, 1};
    c1.repeats = many;
    c1.n_repeats = 6;
    cr_assert_eq(ax_data_canaries(&c1, &r), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "--format"), "%s", ax_error_msg());
    ax_error_clear();
    rm_files(&p);
}

Test(canary, bad_requests_write_nothing) {
    files p;
    make_dataset(&p, "bad");
    ax_canary_result r;
    const char *bad[] = {"{d0}", "{x3}", "no placeholder"};
    for (int i = 0; i < 3; i++) {
        ax_canary_config c = config(&p, bad[i], 10);
        cr_assert_eq(ax_data_canaries(&c, &r), AX_ERR_ARG);
        cr_assert(strstr(ax_error_msg(), "--format"), "%s", ax_error_msg());
        ax_error_clear();
    }
    ax_canary_config c = config(&p, "pin {d4}", 10);
    c.out = p.in; /* never overwrite the input */
    cr_assert_eq(ax_data_canaries(&c, &r), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "must not be the input"), "%s", ax_error_msg());
    ax_error_clear();
    c = config(&p, "pin {d4}", 10);
    c.secrets = p.out;
    cr_assert_eq(ax_data_canaries(&c, &r), AX_ERR_ARG);
    ax_error_clear();
    c = config(&p, "pin {d4}", 10);
    c.tokenizer = p.txt; /* not a tokenizer */
    cr_assert_neq(ax_data_canaries(&c, &r), AX_OK);
    ax_error_clear();
    cr_assert(!ax_path_exists(p.out) && !ax_path_exists(p.sec), "a failed run left a file");
    rm_files(&p);
}

Test(canary, never_splits_a_utf8_character) {
    /* few merges: most multi-byte characters stay split over byte tokens, so half the gaps of
     * this text fall inside a character */
    static const char *WIDE[] = {"\xc3\xa9t\xc3\xa9", "\xe6\x97\xa5\xe6\x9c\xac",
                                 "na\xc3\xafve",      "\xce\xbb\xce\xbc",
                                 "\xf0\x9f\x99\x82",  "caf\xc3\xa9",
                                 "\xe2\x82\xac",      "\xc3\xbc\xc3\xb6",
                                 "\xe3\x81\x82",      "x",
                                 "\xd0\xb4\xd0\xb0",  "\xc3\xb8"};
    files p;
    make_dataset_of(&p, "utf8", WIDE, 262);
    ax_canary_config c = config(&p, "pin {d3}", 10);
    static const int five[] = {5};
    c.repeats = five;
    c.n_repeats = 1;
    c.per_repeat = 40; /* 200 insertions */
    ax_canary_result r;
    cr_assert_eq(ax_data_canaries(&c, &r), AX_OK, "%s", ax_error_msg());
    ax_tokenizer_t *tok;
    cr_assert_eq(ax_tokenizer_load(p.tok, &tok), AX_OK);
    docs_t out = load_docs(p.out), in = load_docs(p.in);
    /* the input has gaps inside characters (else this test proves nothing) */
    long inside = 0;
    for (uint64_t d = 0; d < in.nd; d++)
        for (uint64_t i = 0; i < in.len[d]; i++) {
            size_t n;
            const uint8_t *b = ax_tokenizer_token_bytes(tok, in.doc[d][i], &n);
            inside += n && (b[0] & 0xC0) == 0x80;
        }
    cr_assert(inside > 100, "only %ld gaps inside characters", inside);
    ax_json *j = load_secrets(p.sec);
    const ax_json *cans = ax_json_get(j, "canaries");
    long checked = 0;
    for (size_t i = 0; i < cans->n; i++) {
        size_t nw = ax_json_get(cans->items[i], "tokens")->n;
        const ax_json *at = ax_json_get(cans->items[i], "inserted");
        for (size_t k = 0; k < at->n; k++, checked++) {
            uint64_t d = (uint64_t)ax_json_get(at->items[k], "doc")->num,
                     pos = (uint64_t)ax_json_get(at->items[k], "token_pos")->num;
            /* what follows the canary (another canary, text or end-of-text) starts a character */
            size_t n;
            const uint8_t *b = ax_tokenizer_token_bytes(tok, out.doc[d][pos + nw], &n);
            cr_assert(!n || (b[0] & 0xC0) != 0x80, "canary %zu copy %zu splits a character", i, k);
        }
    }
    cr_assert_eq(checked, 200);
    ax_json_free(j);
    free_docs(&in);
    free_docs(&out);
    ax_tokenizer_free(tok);
    rm_files(&p);
}
