/* `axmem data canaries` (data/canary.h): the format mini-language, and a planted dataset in
 * which each canary's tokens occur exactly `repeats` times (counted by brute force), the
 * references never, removing the recorded insertions gives back the input, and both outputs
 * are mode 0600; every canaried document decodes to text that re-encodes to its tokens (axmem's
 * BPE and a GPT-2 tokenizer.json), each copy a whitespace-delimited segment after a sentence or
 * at a document's end; --within and --as-documents. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data/axd.h"
#include "data/canary.h"
#include "data/data_run.h"
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
static void make_dataset_with(files *p, const char *tag, const char *const *words, int vocab,
                              const char *hf_tokenizer) {
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
    for (int d = 0; d < 30; d++) { /* sentences of 5 words, a full stop after each */
        int nw = 3 + (d * 7) % 25;
        for (int w = 0; w < nw; w++)
            len += (size_t)snprintf(text + len, sizeof text - len, "%s%s%s", w ? " " : "",
                                    words[(d * 31 + w * 17) % 12], w % 5 == 4 ? "." : "");
        text[len++] = '\n';
    }
    cr_assert(td_write(p->txt, text, len));
    const char *in[] = {p->txt};
    ax_data_tokenizer_result tr;
    if (hf_tokenizer)
        snprintf(p->tok, sizeof p->tok, "%s", hf_tokenizer);
    else
        cr_assert_eq(ax_data_tokenizer_train(in, 1, 1, (uint64_t)vocab, 0, p->tok, &tr), AX_OK,
                     "%s", ax_error_msg());
    ax_data_encode_result er;
    cr_assert_eq(ax_data_encode(p->tok, in, 1, 1, 1, p->in, &er), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(er.docs, 30);
}

static void make_dataset_of(files *p, const char *tag, const char *const *words, int vocab) {
    make_dataset_with(p, tag, words, vocab, NULL);
}

static void make_dataset(files *p, const char *tag) {
    make_dataset_of(p, tag, PLAIN, 300);
}

static void rm_files(const files *p) {
    remove(p->txt);
    if (strncmp(p->tok, "tests/", 6)) remove(p->tok); /* never a fixture */
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

/* c is refused as a usage error whose message holds want ("": any message) */
static void refused(const ax_canary_config *c, const char *want) {
    ax_canary_result r;
    cr_assert_eq(ax_data_canaries(c, &r), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), want), "%s", ax_error_msg());
    ax_error_clear();
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
    cr_assert_eq(ax_json_get(j, "version")->num, 2);
    cr_assert_str_eq(ax_json_get(j, "format")->str, "my PIN is {d4}");
    cr_assert_eq(ax_json_get(j, "space")->num, 10000);
    cr_assert_str_eq(ax_json_get(j, "dataset")->str, p.out);
    cr_assert_str_eq(ax_json_get(j, "lead")->str, " ");
    cr_assert_str_eq(ax_json_get(j, "placement")->str, "sentence-boundary");
    { /* the output's identity */
        ax_axd_t *o;
        cr_assert_eq(ax_axd_open(p.out, AX_AXD_VERIFY, &o), AX_OK);
        char hex[32];
        snprintf(hex, sizeof hex, "0x%016llx", (unsigned long long)ax_axd_checksum(o));
        cr_assert_str_eq(ax_json_get(j, "dataset_xxh3")->str, hex);
        cr_assert_eq((uint64_t)ax_json_get(j, "dataset_docs")->num, ax_axd_n_docs(o));
        cr_assert_eq((uint64_t)ax_json_get(j, "dataset_tokens")->num, ax_axd_n_tokens(o));
        ax_axd_free(o);
    }
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
        /* tokens are the tokenization of lead + prefix + secret */
        char text[64];
        snprintf(text, sizeof text, " my PIN is %s", secret);
        int32_t *want;
        size_t nw;
        cr_assert_eq(ax_tokenizer_encode(tok, (const uint8_t *)text, strlen(text), &want, &nw),
                     AX_OK);
        const ax_json *toks = ax_json_get(cn, "tokens");
        cr_assert_eq(toks->n, nw);
        for (size_t t = 0; t < nw; t++) cr_assert_eq((int32_t)toks->items[t]->num, want[t]);
        /* prefix_tokens: the leading tokens inside " my PIN is " */
        int pt = (int)ax_json_get(cn, "prefix_tokens")->num;
        uint8_t *bytes;
        size_t nb;
        cr_assert_eq(ax_tokenizer_decode(tok, want, (size_t)pt, &bytes, &nb), AX_OK);
        cr_assert(nb <= 11 && !memcmp(bytes, " my PIN is ", nb));
        free(bytes);
        cr_assert_eq(ax_tokenizer_decode(tok, want, (size_t)pt + 1, &bytes, &nb), AX_OK);
        cr_assert(nb > 11, "prefix_tokens %d is not the longest", pt);
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
        snprintf(text, sizeof text, " my PIN is %s", s);
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
    refused(&c1, "--format");
    rm_files(&p);
}

Test(canary, bad_requests_write_nothing) {
    files p;
    make_dataset(&p, "bad");
    ax_canary_result r;
    const char *bad[] = {"{d0}", "{x3}", "no placeholder"};
    for (int i = 0; i < 3; i++) {
        ax_canary_config c = config(&p, bad[i], 10);
        refused(&c, "--format");
    }
    ax_canary_config c = config(&p, "pin {d4}", 10);
    c.out = p.in; /* never overwrite the input */
    refused(&c, "must not be the input");
    c = config(&p, "pin {d4}", 10);
    c.secrets = p.out;
    refused(&c, "");
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

/* ---- where copies land: whole segments that survive decode -> encode ---- */

typedef struct {
    uint64_t doc, pos;
    size_t n;
} copy_at;

/* every copy of the secrets file, with its canary's token count */
static copy_at *copies_of(const ax_json *j, size_t *n) {
    const ax_json *cans = ax_json_get(j, "canaries");
    copy_at *c = calloc(4096, sizeof *c);
    *n = 0;
    for (size_t i = 0; i < cans->n; i++) {
        size_t nt = ax_json_get(cans->items[i], "tokens")->n;
        const ax_json *at = ax_json_get(cans->items[i], "inserted");
        for (size_t k = 0; k < at->n; k++, (*n)++)
            c[*n] = (copy_at){(uint64_t)ax_json_get(at->items[k], "doc")->num,
                              (uint64_t)ax_json_get(at->items[k], "token_pos")->num, nt};
    }
    return c;
}

/* the text of tokens t[0..n) ends a sentence: . ! or ? then closing quotes or brackets */
static int text_ends_sentence(const ax_tokenizer_t *tok, const int32_t *t, size_t n) {
    uint8_t *b;
    size_t nb;
    cr_assert_eq(ax_tokenizer_decode(tok, t, n, &b, &nb), AX_OK);
    while (nb && strchr("\"')]", b[nb - 1])) nb--;
    int ok = nb && strchr(".!?", b[nb - 1]);
    free(b);
    return ok;
}

/* Decoding every canaried document and encoding the text again gives its tokens back, the
 * copies where the secrets file says; each copy (or run of copies at one boundary) follows a
 * sentence's end and precedes whitespace, or ends the document. Returns the copies checked. */
static long check_segments(const files *p) {
    ax_tokenizer_t *tok;
    cr_assert_eq(ax_tokenizer_load(p->tok, &tok), AX_OK, "%s", ax_error_msg());
    docs_t out = load_docs(p->out);
    ax_json *j = load_secrets(p->sec);
    const ax_json *lj = ax_json_get(j, "lead");
    const char *lead = lj ? lj->str : ""; /* version 1 had none */
    size_t nc;
    copy_at *c = copies_of(j, &nc);
    const ax_json *cans = ax_json_get(j, "canaries");
    long checked = 0;
    int32_t eot = ax_tokenizer_eot(tok);
    for (uint64_t d = 0; d < out.nd; d++) {
        int has = 0;
        for (size_t i = 0; i < nc; i++) has |= c[i].doc == d;
        if (!has) continue;
        uint8_t *b;
        size_t nb, nt;
        int32_t *t;
        cr_assert_eq(out.doc[d][out.len[d] - 1], eot);
        cr_assert_eq(ax_tokenizer_decode(tok, out.doc[d], out.len[d] - 1, &b, &nb), AX_OK);
        cr_assert_eq(ax_tokenizer_encode(tok, b, nb, &t, &nt), AX_OK);
        cr_assert(nt == out.len[d] - 1 && !memcmp(t, out.doc[d], nt * sizeof *t),
                  "document %lu does not re-encode to its tokens", (unsigned long)d);
        free(b), free(t);
    }
    size_t at = 0;
    for (size_t ci = 0; ci < cans->n; ci++) {
        const ax_json *toks = ax_json_get(cans->items[ci], "tokens");
        size_t reps = ax_json_get(cans->items[ci], "inserted")->n;
        for (size_t k = 0; k < reps; k++, at++, checked++) {
            const copy_at *x = &c[at];
            const int32_t *t = out.doc[x->doc];
            for (size_t i = 0; i < x->n; i++)
                cr_assert_eq(t[x->pos + i], (int32_t)toks->items[i]->num);
            /* the text of the copy starts with the lead */
            uint8_t *b;
            size_t nb;
            cr_assert_eq(ax_tokenizer_decode(tok, t + x->pos, x->n, &b, &nb), AX_OK);
            cr_assert(nb >= strlen(lead) && !memcmp(b, lead, strlen(lead)));
            free(b);
            /* widen to the run of copies around it */
            uint64_t lo = x->pos, hi = x->pos + x->n;
            for (int moved = 1; moved;) {
                moved = 0;
                for (size_t i = 0; i < nc; i++)
                    if (c[i].doc == x->doc && c[i].pos + c[i].n == lo)
                        lo = c[i].pos, moved = 1;
                    else if (c[i].doc == x->doc && c[i].pos == hi)
                        hi += c[i].n, moved = 1;
            }
            size_t nf;
            const uint8_t *f = ax_tokenizer_token_bytes(tok, t[hi], &nf);
            int at_end = hi == out.len[x->doc] - 1;
            int between = lo > 0 && text_ends_sentence(tok, t, lo) && nf && strchr(" \n\t", f[0]);
            cr_assert(at_end || between,
                      "copy %zu of canary %zu (doc %lu, token %lu) is no "
                      "segment of its own",
                      k, ci, (unsigned long)x->doc, (unsigned long)x->pos);
        }
    }
    free(c);
    ax_json_free(j);
    free_docs(&out);
    ax_tokenizer_free(tok);
    return checked;
}

Test(canary, copies_are_segments_that_decode_and_re_encode) {
    /* both tokenizer kinds: axmem's BPE and a GPT-2 byte-level tokenizer.json */
    const char *kinds[] = {NULL, "tests/fixtures/tokenizers/gpt2.json"};
    for (int kind = 0; kind < 2; kind++) {
        files p;
        make_dataset_with(&p, kind ? "seg_hf" : "seg", PLAIN, 300, kinds[kind]);
        ax_canary_config c = config(&p, "my PIN is {d4}", 20);
        static const int reps[] = {1, 4, 16};
        c.repeats = reps;
        ax_canary_result r;
        cr_assert_eq(ax_data_canaries(&c, &r), AX_OK, "%s", ax_error_msg());
        cr_assert_eq(check_segments(&p), 2 * (1 + 4 + 16));
        /* some copies between sentences, some at a document's end */
        ax_json *j = load_secrets(p.sec);
        size_t nc;
        copy_at *cp = copies_of(j, &nc);
        docs_t out = load_docs(p.out);
        int ends = 0;
        for (size_t i = 0; i < nc; i++) ends += cp[i].pos + cp[i].n == out.len[cp[i].doc] - 1;
        cr_assert(ends > 0 && ends < (int)nc, "%d of %zu copies at a document's end", ends, nc);
        free(cp), free_docs(&out), ax_json_free(j);
        rm_files(&p);
    }
}

Test(canary, within_keeps_every_copy_in_a_documents_first_tokens) {
    files p;
    make_dataset(&p, "within");
    ax_canary_config c = config(&p, "my PIN is {d4}", 20);
    ax_canary_result r;
    /* without --within some copies land past token 24 */
    cr_assert_eq(ax_data_canaries(&c, &r), AX_OK, "%s", ax_error_msg());
    ax_json *j = load_secrets(p.sec);
    size_t nc;
    copy_at *cp = copies_of(j, &nc);
    uint64_t far = 0;
    for (size_t i = 0; i < nc; i++) far = cp[i].pos + cp[i].n > far ? cp[i].pos + cp[i].n : far;
    cr_assert(far > 24, "every copy ends by token %lu anyway: the test proves nothing",
              (unsigned long)far);
    free(cp), ax_json_free(j);
    c.within = 24;
    cr_assert_eq(ax_data_canaries(&c, &r), AX_OK, "%s", ax_error_msg());
    j = load_secrets(p.sec);
    cp = copies_of(j, &nc);
    cr_assert_eq(nc, 2 * (1 + 2 + 5));
    cr_assert_eq(ax_json_get(j, "within")->num, 24);
    for (size_t i = 0; i < nc; i++)
        cr_assert(cp[i].pos + cp[i].n <= 24, "copy %zu ends at token %lu", i,
                  (unsigned long)(cp[i].pos + cp[i].n));
    cr_assert_eq(check_segments(&p), (long)nc);
    free(cp), ax_json_free(j);
    /* a canary longer than the window cannot be planted: an error that says what to do */
    c.within = 3;
    refused(&c, "--within");
    rm_files(&p);
}

Test(canary, as_documents_each_copy_is_a_document) {
    files p;
    make_dataset(&p, "asdoc");
    ax_canary_config c = config(&p, "my PIN is {d4}", 20);
    c.as_documents = 1;
    ax_canary_result r;
    cr_assert_eq(ax_data_canaries(&c, &r), AX_OK, "%s", ax_error_msg());
    docs_t in = load_docs(p.in), out = load_docs(p.out);
    ax_json *j = load_secrets(p.sec);
    cr_assert_str_eq(ax_json_get(j, "lead")->str, "");
    cr_assert_str_eq(ax_json_get(j, "placement")->str, "documents");
    size_t nc;
    copy_at *cp = copies_of(j, &nc);
    cr_assert_eq(out.nd, in.nd + nc);
    cr_assert_eq(r.docs, out.nd);
    uint8_t *is_copy = calloc(out.nd, 1);
    for (size_t i = 0; i < nc; i++) {
        cr_assert_eq(cp[i].pos, 0);
        cr_assert_eq(out.len[cp[i].doc], cp[i].n + 1, "copy %zu is not a document alone", i);
        cr_assert(!is_copy[cp[i].doc]);
        is_copy[cp[i].doc] = 1;
    }
    /* the copies' tokens are the text's alone; the rest is the input, in order */
    ax_tokenizer_t *tok;
    cr_assert_eq(ax_tokenizer_load(p.tok, &tok), AX_OK);
    const ax_json *cans = ax_json_get(j, "canaries");
    for (size_t i = 0; i < cans->n; i++) {
        char text[64];
        snprintf(text, sizeof text, "my PIN is %s", ax_json_get(cans->items[i], "secret")->str);
        int32_t *t;
        size_t n;
        cr_assert_eq(ax_tokenizer_encode(tok, (const uint8_t *)text, strlen(text), &t, &n), AX_OK);
        cr_assert_eq(count_occ(&out, t, n), (long)ax_json_get(cans->items[i], "repeats")->num);
        free(t);
    }
    uint64_t k = 0;
    for (uint64_t d = 0; d < out.nd; d++) {
        if (is_copy[d]) continue;
        cr_assert(out.len[d] == in.len[k] && !memcmp(out.doc[d], in.doc[k], in.len[k] * 4));
        k++;
    }
    cr_assert_eq(k, in.nd);
    cr_assert_eq(check_segments(&p), (long)nc);
    free(is_copy), free(cp), ax_json_free(j), free_docs(&in), free_docs(&out);
    ax_tokenizer_free(tok);
    rm_files(&p);
}

/* A document whose tokens are not what encoding its text gives (here: spelled byte by byte,
 * as another tool's output can be) takes no copy: every copy lands in the one document that
 * re-encodes, and the dataset still decodes and re-encodes around each of them. */
Test(canary, documents_that_do_not_re_encode_take_no_copy) {
    files p;
    make_dataset(&p, "spelled");
    ax_tokenizer_t *tok;
    cr_assert_eq(ax_tokenizer_load(p.tok, &tok), AX_OK, "%s", ax_error_msg());
    int32_t byte_id[256];
    for (int b = 0; b < 256; b++) byte_id[b] = -1;
    for (int id = 0; id < ax_tokenizer_vocab_size(tok); id++) {
        size_t len;
        const uint8_t *bytes = ax_tokenizer_token_bytes(tok, id, &len);
        if (len == 1 && byte_id[bytes[0]] < 0) byte_id[bytes[0]] = id;
    }
    docs_t d = load_docs(p.in);
    ax_axd_t *a;
    cr_assert_eq(ax_axd_open(p.in, AX_AXD_VERIFY, &a), AX_OK);
    ax_axd_writer_t *w;
    char spelled[300];
    snprintf(spelled, sizeof spelled, "%s.spelled.axd", p.in);
    cr_assert_eq(ax_axd_writer_create(spelled, ax_axd_vocab_size(a), &w), AX_OK);
    ax_axd_writer_set_tokenizer(w, ax_axd_tokenizer_checksum(a));
    cr_assert_eq(ax_axd_writer_set_eot(w, ax_axd_eot(a)), AX_OK);
    int32_t buf[1 << 14];
    for (uint64_t i = 0; i < d.nd; i++) {
        size_t n = 0;
        if (i == 7) { /* the one document left as the tokenizer encodes it */
            memcpy(buf, d.doc[i], d.len[i] * sizeof *buf);
            n = d.len[i];
        } else {
            uint8_t *text;
            size_t nt;
            cr_assert_eq(ax_tokenizer_decode(tok, d.doc[i], d.len[i] - 1, &text, &nt), AX_OK);
            for (size_t k = 0; k < nt; k++) buf[n++] = byte_id[text[k]];
            buf[n++] = d.doc[i][d.len[i] - 1];
            free(text);
        }
        cr_assert_eq(ax_axd_writer_add_doc(w, buf, n), AX_OK);
    }
    cr_assert_eq(ax_axd_writer_close(w), AX_OK, "%s", ax_error_msg());
    ax_axd_free(a);
    free_docs(&d);
    ax_tokenizer_free(tok);
    rename(spelled, p.in);
    ax_canary_config c = config(&p, "my PIN is {d4}", 20);
    ax_canary_result r;
    cr_assert_eq(ax_data_canaries(&c, &r), AX_OK, "%s", ax_error_msg());
    ax_json *j = load_secrets(p.sec);
    size_t nc;
    copy_at *cp = copies_of(j, &nc);
    cr_assert_eq(nc, 2 * (1 + 2 + 5));
    for (size_t i = 0; i < nc; i++)
        cr_assert_eq(cp[i].doc, 7, "copy %zu in document %lu", i, (unsigned long)cp[i].doc);
    free(cp), ax_json_free(j);
    rm_files(&p);
}
