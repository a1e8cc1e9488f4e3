/* `axmem memscan lookup`: is this passage in the training data? Tokenizes the passage, finds
 * its verbatim spans of >= n tokens in the index, and prints the longest one with its text, the
 * count of every matching window and the source documents. */
#include "lib/core/config.h"
#include "data/axd.h"
#include "data/tokenizer.h"
#include "lib/core/fsutil.h"
#include "lib/core/json.h"
#include "lib/dist/comm.h"
#include "lib/dist/grid.h"
#include "lib/dist/mpienv.h"
#include "cli/commands.h"
#include "index/index.h"
#include "lib/core/cliargs.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char index[AX_CFG_STR_MAX], tok[AX_CFG_STR_MAX], data[AX_CFG_STR_MAX], file[AX_CFG_STR_MAX];
    int json;
    int64_t max_windows, max_sources, occurrences;
    ax_cfg_strlist text;
} lookup_flags;

static const ax_cfg_entry lookup_entries[] = {
    {"index", AX_CFG_STR, offsetof(lookup_flags, index), "", 1, 0,
     "index from `axmem memscan index` (required)"},
    {"tokenizer", AX_CFG_STR, offsetof(lookup_flags, tok), "", 1, 0,
     "tokenizer the dataset was encoded with (required, except for a batch of token ids)"},
    {"data", AX_CFG_STR, offsetof(lookup_flags, data), "", 1, 0,
     "the dataset (.axd; empty: the path stored in the index)"},
    {"file", AX_CFG_STR, offsetof(lookup_flags, file), "", 1, 0,
     "read the passage from F instead of the TEXT argument; F.jsonl: a batch, one query a "
     "line ({\"tokens\": [ids]} or {\"text\": \"...\"}, optional \"id\"), one JSON "
     "answer a line"},
    {"json", AX_CFG_BOOL, offsetof(lookup_flags, json), "false", 1, 0, "one JSON object on stdout"},
    {"max-windows", AX_CFG_INT, offsetof(lookup_flags, max_windows), "50", 0, 9.2e18,
     "list at most N matching windows in text output"},
    {"max-sources", AX_CFG_INT, offsetof(lookup_flags, max_sources), "8", 0, 1e6,
     "documents listed per span (all are counted)"},
    {"occurrences", AX_CFG_INT, offsetof(lookup_flags, occurrences), "0", 0, 1e9,
     "list up to N places (document, offset) of every span and matching window, from the "
     "occurrence lists (all are counted; 0: none)"},
};
static const ax_cfg_positional lookup_text = {"TEXT", offsetof(lookup_flags, text), 0, 0,
                                              "the passage (quote it; or --file F)"};
static const ax_cfg_table lookup_table = {
    .usage = "axmem memscan lookup --index INDEX --tokenizer TOK [flags] TEXT\n"
             "       axmem memscan lookup --index INDEX [--tokenizer TOK] --file QUERIES.jsonl",
    .summary = "Is this passage in the training data? Prints the longest verbatim span of >= n "
               "tokens\nfound (its text and source documents), every maximal such span (longest "
               "first, each\nmatched against every occurrence in the training data, with the "
               "documents holding it),\nand how many times each matching n-token window occurs. "
               "Every match is checked against\nthe dataset. The index is read in place "
               "(memory-mapped), not loaded; a batch\n(--file QUERIES.jsonl) pays that open "
               "once for all its queries. A lookup that meets a damaged\nindex page gives no "
               "answer: exit 1, nothing on stdout (--json: {\"error\": ...}; a batch\nquery: "
               "its error line).",
    .entries = lookup_entries,
    .n = (int)(sizeof lookup_entries / sizeof lookup_entries[0]),
    .positional = &lookup_text,
};

/* The flags, and views of them as the rest of this file reads them (NULL when not given). */
typedef struct {
    lookup_flags fl;
    const char *index, *tok, *data, *file, *text;
    int json, batch;
    uint64_t max_windows;
    size_t max_sources;
    uint64_t max_occ; /* --occurrences */
} lookup_args;

/* scratch for a window's places (--occurrences), grown as needed */
typedef struct {
    ax_memscan_source *v;
    size_t cap;
} places_buf;

/* The first min(total, max) places of the window found at (first, count) into b->v; returns
 * how many are listed, *total all of them. */
static ax_status window_places(const ax_memscan_index_t *idx, uint64_t first, uint32_t count,
                               uint64_t max, places_buf *b, size_t *listed, uint64_t *total) {
    const uint64_t *list;
    uint64_t m = ax_memscan_index_occurrences(idx, first, count, &list);
    if (!list) m = 1;
    size_t want = (size_t)(m < max ? m : max);
    if (want > b->cap) {
        ax_memscan_source *nv = realloc(b->v, sizeof *nv * want);
        if (!nv) return ax_errorf(AX_ERR_NOMEM, "out of memory for %zu places", want);
        b->v = nv;
        b->cap = want;
    }
    *total = ax_memscan_window_sources(idx, first, count, b->v, want);
    *listed = want;
    return AX_OK;
}

static void jw_places(ax_jw *w, const ax_memscan_source *p, size_t n) {
    ax_jw_key(w, "places");
    ax_jw_arr_begin(w);
    for (size_t k = 0; k < n; k++) {
        ax_jw_obj_begin(w);
        ax_jw_key(w, "doc");
        ax_jw_uint(w, p[k].doc);
        ax_jw_key(w, "offset");
        ax_jw_uint(w, p[k].doc_off);
        ax_jw_key(w, "pos");
        ax_jw_uint(w, p[k].pos);
        ax_jw_obj_end(w);
    }
    ax_jw_arr_end(w);
}

static void put_places(FILE *out, const ax_memscan_source *p, size_t n, uint64_t total) {
    fprintf(out, "    at:");
    for (size_t k = 0; k < n; k++)
        fprintf(out, " doc %" PRIu64 " +%" PRIu64, p[k].doc, p[k].doc_off);
    if (total > n) fprintf(out, " ... %" PRIu64 " more (--occurrences N)", total - n);
    fprintf(out, "\n");
}

/* A query whose lookups met a damaged index page: its windows there read as absent, so any
 * answer would undercount; it gets this error instead. */
static ax_status damaged_query(const char *index) {
    return ax_errorf(AX_ERR_CORRUPT,
                     "index %s is damaged where this query's windows lie (a page fails its "
                     "checksum), so it has no answer; `axmem memscan info --verify %s` names the "
                     "damage; rebuild the index with `axmem memscan index`",
                     index, index);
}

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

static int parse(int argc, char **argv, lookup_args *a) {
    static const char *SUB = "memscan lookup";
    memset(a, 0, sizeof *a);
    int rc = ax_cli_parse(SUB, &lookup_table, &a->fl, argc, argv, NULL);
    if (rc >= 0) return rc;
    lookup_flags *f = &a->fl;
    a->index = f->index[0] ? f->index : NULL;
    a->tok = f->tok[0] ? f->tok : NULL;
    a->data = f->data[0] ? f->data : NULL;
    a->file = f->file[0] ? f->file : NULL;
    a->text = f->text.n ? f->text.v[0] : NULL;
    a->json = f->json;
    a->max_windows = (uint64_t)f->max_windows;
    a->max_sources = (size_t)f->max_sources;
    a->max_occ = (uint64_t)f->occurrences;
    a->batch = a->file && ends_with(a->file, ".jsonl");
    if (!a->index) return ax_cli_usage(SUB, "%s", "--index INDEX is required");
    if (!a->tok && !a->batch) return ax_cli_usage(SUB, "%s", "--tokenizer TOK is required");
    if (!a->text && !a->file)
        return ax_cli_usage(SUB, "%s",
                            "a TEXT argument or --file F is "
                            "required");
    if (a->text && a->file) return ax_cli_usage(SUB, "%s", "give TEXT or --file, not both");
    return -1; /* go on */
}

/* the text of tokens[start, start+len), control characters escaped, on one line */
static void put_text(FILE *f, const ax_tokenizer_t *tok, const int32_t *t, size_t len) {
    uint8_t *b = NULL;
    size_t n = 0;
    if (ax_tokenizer_decode(tok, t, len, &b, &n) != AX_OK) return;
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        uint8_t c = b[i];
        if (c == '\n')
            fputs("\\n", f);
        else if (c == '\t')
            fputs("\\t", f);
        else if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            fprintf(f, "\\x%02x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
    free(b);
}

/* a span's text, cut at character boundaries: a span may start or end inside a multi-byte
 * character, and the partial character is dropped rather than replaced */
static void jw_text(ax_jw *w, const ax_tokenizer_t *tok, const int32_t *t, size_t len) {
    uint8_t *b = NULL;
    size_t n = 0, off = 0;
    if (!tok || ax_tokenizer_decode(tok, t, len, &b, &n) != AX_OK) {
        ax_jw_null(w);
        return;
    }
    n = ax_utf8_clip((const char *)b, n, &off);
    ax_jw_strn(w, (const char *)b + off, n);
    free(b);
}

static void jw_span(ax_jw *w, const ax_memscan_span *s, const ax_tokenizer_t *tok, const int32_t *t,
                    int places) {
    ax_jw_obj_begin(w);
    ax_jw_key(w, "start");
    ax_jw_uint(w, s->start);
    ax_jw_key(w, "len");
    ax_jw_uint(w, s->len);
    ax_jw_key(w, "doc");
    ax_jw_uint(w, s->doc);
    ax_jw_key(w, "offset");
    ax_jw_uint(w, s->doc_off);
    ax_jw_key(w, "pos");
    ax_jw_uint(w, s->pos);
    ax_jw_key(w, "occurrences");
    ax_jw_uint(w, s->occurrences);
    ax_jw_key(w, "sources");
    ax_jw_uint(w, s->docs);
    ax_jw_key(w, "docs");
    ax_jw_arr_begin(w);
    for (size_t d = 0; d < s->n_sources; d++) {
        ax_jw_obj_begin(w);
        ax_jw_key(w, "doc");
        ax_jw_uint(w, s->sources[d].doc);
        ax_jw_key(w, "offset");
        ax_jw_uint(w, s->sources[d].doc_off);
        ax_jw_obj_end(w);
    }
    ax_jw_arr_end(w);
    if (places) jw_places(w, s->occ, s->n_occ);
    ax_jw_key(w, "count_min");
    ax_jw_uint(w, s->count_min);
    ax_jw_key(w, "count_max");
    ax_jw_uint(w, s->count_max);
    ax_jw_key(w, "text");
    jw_text(w, tok, t + s->start, s->len);
    ax_jw_obj_end(w);
}

/* a batch query's line number and id (echoed as given: a string or an integer) */
typedef struct {
    uint64_t line;
    const ax_json *id;
} query_tag;

static void jw_query_tag(ax_jw *w, const query_tag *q) {
    if (!q) return;
    ax_jw_key(w, "line");
    ax_jw_uint(w, q->line);
    int64_t v;
    if (!q->id) return;
    ax_jw_key(w, "id");
    if (q->id->type == AX_JSON_STR)
        ax_jw_strn(w, q->id->str, q->id->str_len);
    else if (ax_json_int_in(q->id, INT64_MIN, INT64_MAX, &v))
        ax_jw_int(w, v);
    else
        ax_jw_null(w);
}

/* The --json answer (one object) into w, which the caller prints only once the whole query
 * succeeded. */
static ax_status build_json(const lookup_args *a, const ax_memscan_index_t *idx,
                            const ax_tokenizer_t *tok, const int32_t *t, size_t len,
                            const ax_memscan_span *sp, size_t ns, const uint32_t *cnt,
                            const uint64_t *first, size_t W, const query_tag *q, ax_jw *w) {
    places_buf pb = {NULL, 0};
    ax_status st = AX_OK;
    int places = a->max_occ > 0;
    const ax_memscan_info *in = ax_memscan_index_info(idx);
    const ax_axd_t *ds = ax_memscan_index_dataset(idx);
    const uint64_t *off = ax_axd_doc_offsets(ds);
    size_t found = 0;
    for (size_t i = 0; i < W; i++) found += cnt[i] > 0;
    ax_jw_obj_begin(w);
    jw_query_tag(w, q);
    ax_jw_key(w, "index");
    ax_jw_str(w, a->index);
    ax_jw_key(w, "dataset");
    ax_jw_str(w, ax_axd_path(ds));
    ax_jw_key(w, "n");
    ax_jw_uint(w, in->n);
    ax_jw_key(w, "tokens");
    ax_jw_uint(w, len);
    ax_jw_key(w, "windows");
    ax_jw_uint(w, W);
    ax_jw_key(w, "windows_found");
    ax_jw_uint(w, found);
    ax_jw_key(w, "longest");
    if (ns)
        jw_span(w, &sp[0], tok, t, places);
    else
        ax_jw_null(w);
    ax_jw_key(w, "spans");
    ax_jw_arr_begin(w);
    for (size_t i = 0; i < ns; i++) jw_span(w, &sp[i], tok, t, places);
    ax_jw_arr_end(w);
    ax_jw_key(w, "matching_windows");
    ax_jw_arr_begin(w);
    for (size_t i = 0; i < W; i++) {
        if (!cnt[i]) continue;
        uint64_t d = ax_axd_doc_of(ds, first[i]);
        const uint64_t *list;
        ax_jw_obj_begin(w);
        ax_jw_key(w, "start");
        ax_jw_uint(w, i);
        ax_jw_key(w, "count");
        ax_jw_uint(w, ax_memscan_index_occurrences(idx, first[i], cnt[i], &list));
        ax_jw_key(w, "doc");
        ax_jw_uint(w, d);
        ax_jw_key(w, "offset");
        ax_jw_uint(w, first[i] - off[d]);
        if (places) {
            size_t listed = 0;
            uint64_t total = 0;
            if ((st = window_places(idx, first[i], cnt[i], a->max_occ, &pb, &listed, &total)) !=
                AX_OK)
                break;
            jw_places(w, pb.v, listed);
        }
        ax_jw_obj_end(w);
    }
    ax_jw_arr_end(w);
    ax_jw_obj_end(w);
    free(pb.v);
    if (st == AX_OK && !ax_jw_text(w)) st = ax_errorf(AX_ERR_NOMEM, "out of memory for the answer");
    return st;
}

static ax_status print_text(const lookup_args *a, const ax_memscan_index_t *idx,
                            const ax_tokenizer_t *tok, const int32_t *t, size_t len,
                            const ax_memscan_span *sp, size_t ns, const uint32_t *cnt,
                            const uint64_t *first, size_t W, FILE *out) {
    const ax_memscan_info *in = ax_memscan_index_info(idx);
    const ax_axd_t *ds = ax_memscan_index_dataset(idx);
    const uint64_t *off = ax_axd_doc_offsets(ds);
    size_t found = 0;
    for (size_t i = 0; i < W; i++) found += cnt[i] > 0;
    fprintf(out,
            "passage: %zu tokens, %zu windows of %u tokens, %zu found in the training data (%s)\n",
            len, W, in->n, found, ax_axd_path(ds));
    if (len < in->n)
        fprintf(out,
                "the passage is shorter than the index's window (%u tokens): nothing to match\n",
                in->n);
    if (!ns) {
        if (len >= in->n)
            fprintf(out, "no verbatim span of %u+ tokens found in the training data\n", in->n);
        return AX_OK;
    }
    const ax_memscan_span *L = &sp[0];
    fprintf(out,
            "longest verbatim span: %zu tokens (passage tokens %zu-%zu), in %" PRIu64
            " document%s (%" PRIu64 " place%s); first in document %" PRIu64
            " at token offset %" PRIu64 "\n",
            L->len, L->start, L->start + L->len, L->docs, L->docs == 1 ? "" : "s", L->occurrences,
            L->occurrences == 1 ? "" : "s", L->doc, L->doc_off);
    if (L->n_sources > 1) {
        fprintf(out, "  documents:");
        for (size_t d = 0; d < L->n_sources; d++)
            fprintf(out, " %" PRIu64 " +%" PRIu64, L->sources[d].doc, L->sources[d].doc_off);
        if (L->docs > L->n_sources)
            fprintf(out, " ... %" PRIu64 " more (--max-sources N)", L->docs - L->n_sources);
        fprintf(out, "\n");
    }
    if (L->count_min == L->count_max)
        fprintf(out, "  each of its windows occurs %" PRIu64 " time%s in the training data\n",
                L->count_min, L->count_min == 1 ? "" : "s");
    else
        fprintf(out, "  its windows occur %" PRIu64 " to %" PRIu64 " times in the training data\n",
                L->count_min, L->count_max);
    fprintf(out, "  text: ");
    put_text(out, tok, t + L->start, L->len);
    fprintf(out, "\n");
    fprintf(out, "%zu verbatim span%s (longest first):\n", ns, ns == 1 ? "" : "s");
    for (size_t i = 0; i < ns; i++) {
        fprintf(out,
                "  tokens %zu-%zu  %zu tokens  doc %" PRIu64 " +%" PRIu64 "%s  in %" PRIu64
                " doc%s  windows x%" PRIu64 "%s\n",
                sp[i].start, sp[i].start + sp[i].len, sp[i].len, sp[i].doc, sp[i].doc_off,
                sp[i].docs > 1 ? " (first)" : "", sp[i].docs, sp[i].docs == 1 ? "" : "s",
                sp[i].count_min, sp[i].count_max != sp[i].count_min ? "+" : "");
        if (a->max_occ) put_places(out, sp[i].occ, sp[i].n_occ, sp[i].occurrences);
    }
    places_buf pb = {NULL, 0};
    ax_status st = AX_OK;
    fprintf(out, "matching windows (passage tokens, occurrences, first occurrence):\n");
    uint64_t shown = 0;
    for (size_t i = 0; i < W; i++) {
        if (!cnt[i]) continue;
        if (shown == a->max_windows) {
            fprintf(out, "  ... %zu more (--max-windows N or --json lists them all)\n",
                    found - (size_t)shown);
            break;
        }
        uint64_t d = ax_axd_doc_of(ds, first[i]);
        const uint64_t *list;
        fprintf(out, "  tokens %zu-%zu  x%" PRIu64 "  doc %" PRIu64 " +%" PRIu64 "\n", i, i + in->n,
                ax_memscan_index_occurrences(idx, first[i], cnt[i], &list), d, first[i] - off[d]);
        shown++;
        if (a->max_occ) {
            size_t listed = 0;
            uint64_t total = 0;
            if ((st = window_places(idx, first[i], cnt[i], a->max_occ, &pb, &listed, &total)) !=
                AX_OK)
                break;
            put_places(out, pb.v, listed, total);
        }
    }
    free(pb.v);
    return st;
}

/* One batch query (a parsed line) -> tokens: "tokens": [ids < vocab], or "text" encoded with
 * the tokenizer. Errors say what is wrong with the line. */
static ax_status query_tokens(const ax_json *q, const ax_tokenizer_t *tok, uint32_t vocab,
                              int32_t **t, size_t *len) {
    *t = NULL;
    *len = 0;
    if (q->type != AX_JSON_OBJ)
        return ax_errorf(AX_ERR_ARG, "a query is a JSON object with \"tokens\" or \"text\"");
    const ax_json *ids = ax_json_get(q, "tokens"), *text = ax_json_get(q, "text");
    if (!ids == !text)
        return ax_errorf(AX_ERR_ARG, "give exactly one of \"tokens\" (token ids) and \"text\"");
    if (text) {
        if (text->type != AX_JSON_STR) return ax_errorf(AX_ERR_ARG, "\"text\" must be a string");
        if (!tok)
            return ax_errorf(AX_ERR_ARG,
                             "a \"text\" query needs --tokenizer TOK (or give \"tokens\")");
        return ax_tokenizer_encode(tok, (const uint8_t *)text->str, text->str_len, t, len);
    }
    if (ids->type != AX_JSON_ARR)
        return ax_errorf(AX_ERR_ARG, "\"tokens\" must be an array of token ids");
    *t = malloc(sizeof **t * (ids->n ? ids->n : 1));
    if (!*t) return ax_errorf(AX_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < ids->n; i++) {
        int64_t v;
        if (!ax_json_int_in(ids->items[i], 0, (int64_t)vocab - 1, &v)) {
            free(*t);
            *t = NULL;
            return ax_errorf(AX_ERR_ARG,
                             "\"tokens\"[%zu] is not a token id in [0, %u) (the dataset's "
                             "vocabulary)",
                             i, vocab);
        }
        (*t)[i] = (int32_t)v;
    }
    *len = ids->n;
    return AX_OK;
}

/* Window lookups made elsewhere (by the ranks serving them): counts, firsts, and where the
 * server met damage. */
typedef struct {
    const uint32_t *cnt;
    const uint64_t *first;
    const uint8_t *damaged;
} given_lookups;

/* One query's answer from its tokens, printed on out only when complete; g: its window
 * lookups made elsewhere, or NULL to look them up here. A query that met a damaged page fails
 * (damaged_query) and prints nothing. */
static ax_status answer_tokens(const lookup_args *a, const ax_memscan_index_t *idx,
                               const ax_tokenizer_t *tok, const int32_t *t, size_t len,
                               const given_lookups *g, const query_tag *qt, FILE *out) {
    const ax_memscan_info *in = ax_memscan_index_info(idx);
    size_t ns = 0, W = len >= in->n ? len - in->n + 1 : 0;
    uint64_t met = ax_memscan_index_damage_met(idx);
    int damaged = 0;
    ax_memscan_span *sp = NULL;
    uint32_t *cnt = malloc(sizeof *cnt * (W + 1));
    uint64_t *first = malloc(sizeof *first * (W + 1));
    ax_jw w;
    ax_jw_init(&w);
    ax_status st = cnt && first ? AX_OK : ax_errorf(AX_ERR_NOMEM, "out of memory");
    if (st == AX_OK) {
        if (g) {
            if (W) memcpy(cnt, g->cnt, sizeof *cnt * W);
            if (W) memcpy(first, g->first, sizeof *first * W);
            for (size_t i = 0; i < W; i++) damaged |= g->damaged[i];
        } else {
            ax_memscan_index_lookup_all(idx, t, len, cnt, first);
        }
        st = ax_memscan_find_spans_given(idx, t, len, cnt, first, a->max_sources, a->max_occ, &sp,
                                         &ns);
    }
    if (st == AX_OK) st = build_json(a, idx, tok, t, len, sp, ns, cnt, first, W, qt, &w);
    if (st == AX_OK && (damaged || ax_memscan_index_damage_met(idx) != met))
        st = damaged_query(a->index);
    if (st == AX_OK) fprintf(out, "%s\n", ax_jw_text(&w));
    ax_jw_free(&w);
    free(cnt);
    free(first);
    free(sp);
    return st;
}

/* A query line -> its parsed object (for its id) and tokens. */
static ax_status parse_query(const lookup_args *a, const ax_memscan_index_t *idx,
                             const ax_tokenizer_t *tok, const char *line, size_t n, ax_json **q,
                             int32_t **t, size_t *len) {
    (void)a;
    *t = NULL;
    *len = 0;
    AX_CHECK(ax_json_parse(line, n, "the query", q));
    return query_tokens(*q, tok, ax_memscan_index_info(idx)->vocab, t, len);
}

static ax_status answer_query(const lookup_args *a, const ax_memscan_index_t *idx,
                              const ax_tokenizer_t *tok, const char *line, size_t n,
                              const query_tag *qt_in, FILE *out) {
    ax_json *q = NULL;
    int32_t *t = NULL;
    size_t len = 0;
    query_tag qt = *qt_in;
    ax_status st = parse_query(a, idx, tok, line, n, &q, &t, &len);
    if (q) qt.id = ax_json_get(q, "id");
    if (st == AX_OK) st = answer_tokens(a, idx, tok, t, len, NULL, &qt, out);
    free(t);
    ax_json_free(q);
    return st;
}

/* {"line": N, "error": "FILE line N: message"} */
static void put_error_line(const lookup_args *a, uint64_t lineno, const char *why, FILE *out) {
    ax_jw w;
    ax_jw_init(&w);
    ax_jw_obj_begin(&w);
    ax_jw_key(&w, "line");
    ax_jw_uint(&w, lineno);
    ax_jw_key(&w, "error");
    char msg[1200];
    snprintf(msg, sizeof msg, "%s line %llu: %s", a->file, (unsigned long long)lineno, why);
    ax_jw_str(&w, msg);
    ax_jw_obj_end(&w);
    const char *text = ax_jw_text(&w);
    if (text) fprintf(out, "%s\n", text);
    ax_jw_free(&w);
}

/* the next non-blank line (trailing newline cut): 1, or 0 at the end */
static int next_query(FILE *f, char **line, size_t *cap, uint64_t *lineno, size_t *n) {
    ssize_t got;
    while ((got = getline(line, cap, f)) >= 0) {
        ++*lineno;
        size_t m = (size_t)got, k = 0;
        while (m && ((*line)[m - 1] == '\n' || (*line)[m - 1] == '\r')) m--;
        while (k < m && ((*line)[k] == ' ' || (*line)[k] == '\t')) k++;
        if (k == m) continue;
        *n = m;
        return 1;
    }
    return 0;
}

static int batch_summary(const lookup_args *a, uint64_t n_failed, uint64_t n_queries) {
    if (!n_failed) return 0;
    if (ax_mpi_world_rank() == 0)
        fprintf(stderr,
                "axmem memscan lookup: %llu of %llu queries in %s failed (see their "
                "\"error\" lines)\n",
                (unsigned long long)n_failed, (unsigned long long)n_queries, a->file);
    return 1;
}

/* --file QUERIES.jsonl: one answer line per query line (blank lines skipped), an error object
 * {"line": N, "error": "..."} for a bad one (a query that met a damaged index page too, with
 * no partial answer); exit 1 if any failed. */
static int run_batch(const lookup_args *a, const ax_memscan_index_t *idx,
                     const ax_tokenizer_t *tok) {
    static const char *SUB = "memscan lookup";
    FILE *f;
    ax_status st = ax_fopen_regular(a->file, "pass a file of JSON queries, one a line", &f);
    if (st != AX_OK) return ax_cli_fail(SUB, st);
    char *line = NULL;
    size_t cap = 0, n;
    uint64_t lineno = 0, n_queries = 0, n_failed = 0;
    while (next_query(f, &line, &cap, &lineno, &n)) {
        n_queries++;
        query_tag qt = {lineno, NULL};
        ax_error_clear();
        if (answer_query(a, idx, tok, line, n, &qt, stdout) == AX_OK) continue;
        n_failed++;
        put_error_line(a, lineno, ax_error_msg(), stdout);
    }
    int read_err = ferror(f);
    fclose(f);
    free(line);
    fflush(stdout);
    if (read_err) return ax_cli_fail(SUB, ax_errorf(AX_ERR_IO, "%s: read error", a->file));
    /* damage fails the queries that met it (above); this only backs that up */
    st = ax_memscan_index_check(idx);
    if (st != AX_OK && !n_failed) return ax_cli_fail(SUB, st);
    return batch_summary(a, n_failed, n_queries);
}

/* A batch under mpirun (issue 12 item 3): every rank opened the index; rank r answers the r-th
 * contiguous block of queries, its windows looked up by the ranks serving their hash ranges
 * (ax_memscan_index_lookup_routed: one exchange for the whole block), and rank 0 prints the
 * answers in query order, the same lines a single process prints. */
typedef struct {
    uint64_t lineno;
    char *line;
    size_t n;
    ax_json *q;
    int32_t *t;
    size_t len, w0; /* tokens; the first of its windows in the block's window array */
    char *err;      /* why it failed (malloc'd), or NULL */
} block_query;

static ax_status block_read(const lookup_args *a, block_query **out, size_t *n_out,
                            uint64_t *n_all) {
    FILE *f;
    AX_CHECK(ax_fopen_regular(a->file, "pass a file of JSON queries, one a line", &f));
    char *line = NULL;
    size_t cap = 0, n, m = 0, mcap = 0;
    uint64_t lineno = 0, total = 0;
    int R = ax_mpi_world_size(), r = ax_mpi_world_rank();
    /* first pass: how many queries, so each rank knows its block */
    while (next_query(f, &line, &cap, &lineno, &n)) total++;
    uint64_t lo = total * (uint64_t)r / (uint64_t)R, hi = total * (uint64_t)(r + 1) / (uint64_t)R;
    rewind(f);
    lineno = 0;
    block_query *b = NULL;
    ax_status st = AX_OK;
    for (uint64_t i = 0; st == AX_OK && next_query(f, &line, &cap, &lineno, &n); i++) {
        if (i < lo || i >= hi) continue;
        if (m == mcap) {
            mcap = mcap ? 2 * mcap : 64;
            block_query *nb = realloc(b, sizeof *nb * mcap);
            if (!nb) {
                st = ax_errorf(AX_ERR_NOMEM, "out of memory for queries");
                break;
            }
            b = nb;
        }
        block_query *q = &b[m++];
        memset(q, 0, sizeof *q);
        q->lineno = lineno;
        q->n = n;
        q->line = malloc(n + 1);
        if (!q->line)
            st = ax_errorf(AX_ERR_NOMEM, "out of memory for queries");
        else
            memcpy(q->line, line, n), q->line[n] = 0;
    }
    if (st == AX_OK && ferror(f)) st = ax_errorf(AX_ERR_IO, "%s: read error", a->file);
    fclose(f);
    free(line);
    *out = b;
    *n_out = m;
    *n_all = total;
    return st;
}

static void block_free(block_query *b, size_t m) {
    for (size_t i = 0; i < m; i++) {
        free(b[i].line);
        free(b[i].t);
        free(b[i].err);
        ax_json_free(b[i].q);
    }
    free(b);
}

/* rank 0 prints its text then every other rank's in rank order; others send theirs */
static ax_status gather_print(ax_grid_t *g, const char *text, size_t len) {
    int R = ax_grid_dim(g, AX_AXIS_WORLD), r = ax_grid_coord(g, AX_AXIS_WORLD);
    if (r != 0) {
        uint64_t L = len;
        AX_CHECK(ax_coll_send(g, AX_AXIS_WORLD, &L, 1, AX_DT_U64, 0, 1));
        if (L) AX_CHECK(ax_coll_send(g, AX_AXIS_WORLD, text, (long)L, AX_DT_U8, 0, 2));
        return AX_OK;
    }
    fwrite(text, 1, len, stdout);
    for (int p = 1; p < R; p++) {
        uint64_t L;
        AX_CHECK(ax_coll_recv(g, AX_AXIS_WORLD, &L, 1, AX_DT_U64, p, 1));
        char *buf = malloc(L ? L : 1);
        if (!buf) return ax_errorf(AX_ERR_NOMEM, "out of memory gathering answers");
        ax_status st = L ? ax_coll_recv(g, AX_AXIS_WORLD, buf, (long)L, AX_DT_U8, p, 2) : AX_OK;
        if (st == AX_OK) fwrite(buf, 1, L, stdout);
        free(buf);
        AX_CHECK(st);
    }
    fflush(stdout);
    return AX_OK;
}

static int run_batch_ranks(const lookup_args *a, const ax_memscan_index_t *idx,
                           const ax_tokenizer_t *tok) {
    static const char *SUB = "memscan lookup";
    const size_t n = ax_memscan_index_info(idx)->n;
    block_query *b = NULL;
    size_t m = 0, nw = 0;
    uint64_t total = 0, n_failed = 0;
    int32_t *win = NULL;
    uint32_t *cnt = NULL;
    uint64_t *first = NULL;
    uint8_t *dmg = NULL;
    char *text = NULL;
    size_t text_len = 0;
    ax_grid_t *g = NULL;
    ax_status st = ax_grid_create_world(&g);
    if (st == AX_OK) st = block_read(a, &b, &m, &total);
    /* parse and tokenize; a bad query keeps its message and has no windows */
    for (size_t i = 0; st == AX_OK && i < m; i++) {
        block_query *q = &b[i];
        ax_error_clear();
        ax_status qs = parse_query(a, idx, tok, q->line, q->n, &q->q, &q->t, &q->len);
        if (qs != AX_OK) {
            q->err = strdup(ax_error_msg());
            free(q->t);
            q->t = NULL;
            q->len = 0;
            if (!q->err) st = ax_errorf(AX_ERR_NOMEM, "out of memory");
            continue;
        }
        q->w0 = nw;
        nw += q->len >= n ? q->len - n + 1 : 0;
    }
    if (st == AX_OK) {
        win = malloc(sizeof *win * (nw * n + 1));
        cnt = malloc(sizeof *cnt * (nw + 1));
        first = malloc(sizeof *first * (nw + 1));
        dmg = malloc(nw + 1);
        if (!win || !cnt || !first || !dmg)
            st = ax_errorf(AX_ERR_NOMEM, "out of memory for windows");
    }
    for (size_t i = 0; st == AX_OK && i < m; i++)
        for (size_t j = 0; b[i].t && j + n <= b[i].len; j++)
            memcpy(win + (b[i].w0 + j) * n, b[i].t + j, sizeof *win * n);
    /* every rank joins the exchange, even after a failure of its own */
    st = ax_coll_agree(g, AX_AXIS_WORLD, st, "memscan lookup batch");
    if (st == AX_OK) st = ax_memscan_index_lookup_routed(idx, win, nw, cnt, first, dmg);
    FILE *out = NULL;
    if (st == AX_OK) {
        out = open_memstream(&text, &text_len);
        if (!out) st = ax_errorf(AX_ERR_NOMEM, "out of memory for answers");
    }
    for (size_t i = 0; st == AX_OK && i < m; i++) {
        block_query *q = &b[i];
        query_tag qt = {q->lineno, q->q ? ax_json_get(q->q, "id") : NULL};
        given_lookups gl = {cnt + q->w0, first + q->w0, dmg + q->w0};
        ax_error_clear();
        if (!q->err && answer_tokens(a, idx, tok, q->t, q->len, &gl, &qt, out) == AX_OK) continue;
        n_failed++;
        put_error_line(a, q->lineno, q->err ? q->err : ax_error_msg(), out);
    }
    if (out) fclose(out);
    /* damage fails the queries that met it (error lines above), not the whole batch */
    st = ax_coll_agree(g, AX_AXIS_WORLD, st, "memscan lookup batch");
    if (st == AX_OK) st = gather_print(g, text ? text : "", text ? text_len : 0);
    if (st == AX_OK) st = ax_coll_allreduce(g, AX_AXIS_WORLD, &n_failed, 1, AX_DT_U64, AX_OP_SUM);
    free(text);
    free(win);
    free(cnt);
    free(first);
    free(dmg);
    block_free(b, m);
    ax_grid_free(g);
    if (st != AX_OK) return ax_cli_fail(SUB, st);
    return batch_summary(a, n_failed, total);
}

/* The passage (TEXT or --file F) as tokens */
static ax_status passage_tokens(const lookup_args *a, const ax_tokenizer_t *tok, int32_t **t,
                                size_t *len) {
    char *text = NULL;
    size_t text_len = 0;
    if (a->file) {
        AX_CHECK(ax_read_file(a->file, &text, &text_len));
    } else {
        text_len = strlen(a->text);
        text = malloc(text_len + 1);
        if (!text) return ax_errorf(AX_ERR_NOMEM, "out of memory");
        memcpy(text, a->text, text_len + 1);
    }
    ax_status st = ax_tokenizer_encode(tok, (const uint8_t *)text, text_len, t, len);
    free(text);
    return st;
}

/* One passage: the answer is written to a buffer and printed only when the whole lookup
 * succeeded, so a failure (a damaged index page met on the way) prints no answer. */
static ax_status answer_passage(const lookup_args *a, const ax_memscan_index_t *idx,
                                const ax_tokenizer_t *tok) {
    const ax_memscan_info *in = ax_memscan_index_info(idx);
    size_t len = 0, ns = 0, W = 0, ans_len = 0;
    int32_t *t = NULL;
    ax_memscan_span *sp = NULL;
    uint32_t *cnt = NULL;
    uint64_t *first = NULL;
    char *ans = NULL;
    FILE *out = NULL;
    ax_jw w;
    ax_jw_init(&w);
    uint64_t met = ax_memscan_index_damage_met(idx);
    ax_status st;
    AX_CHECK_GOTO(passage_tokens(a, tok, &t, &len), done);
    AX_CHECK_GOTO(ax_memscan_find_spans_occ(idx, t, len, a->max_sources, a->max_occ, &sp, &ns),
                  done);
    W = len >= in->n ? len - in->n + 1 : 0;
    cnt = malloc(sizeof *cnt * (W + 1));
    first = malloc(sizeof *first * (W + 1));
    out = open_memstream(&ans, &ans_len);
    if (!cnt || !first || !out) {
        st = ax_errorf(AX_ERR_NOMEM, "out of memory");
        goto done;
    }
    ax_memscan_index_lookup_all(idx, t, len, cnt, first);
    if (a->json) {
        AX_CHECK_GOTO(build_json(a, idx, tok, t, len, sp, ns, cnt, first, W, NULL, &w), done);
        fprintf(out, "%s\n", ax_jw_text(&w));
    } else {
        AX_CHECK_GOTO(print_text(a, idx, tok, t, len, sp, ns, cnt, first, W, out), done);
    }
    if (fclose(out) != 0) {
        out = NULL;
        st = ax_errorf(AX_ERR_NOMEM, "out of memory for the answer");
        goto done;
    }
    out = NULL;
    /* damage met on the way (pages are verified as lookups touch them): no answer */
    if (ax_memscan_index_damage_met(idx) != met) {
        st = damaged_query(a->index);
        goto done;
    }
    AX_CHECK_GOTO(ax_memscan_index_check(idx), done);
    fwrite(ans, 1, ans_len, stdout);
    fflush(stdout);
done:
    if (out) fclose(out);
    free(ans);
    ax_jw_free(&w);
    free(cnt);
    free(first);
    free(sp);
    free(t);
    return st;
}

/* --json: a failure is one JSON object {"error": "..."} on stdout (besides the line on stderr),
 * so a script reading stdout never takes it for an answer */
static void put_json_error(const char *why) {
    ax_jw w;
    ax_jw_init(&w);
    ax_jw_obj_begin(&w);
    ax_jw_key(&w, "error");
    ax_jw_str(&w, why);
    ax_jw_obj_end(&w);
    if (ax_jw_text(&w)) printf("%s\n", ax_jw_text(&w));
    fflush(stdout);
    ax_jw_free(&w);
}

int ax_cmd_memscan_lookup(int argc, char **argv) {
    static const char *SUB = "memscan lookup";
    lookup_args a;
    int rc = parse(argc, argv, &a);
    if (rc >= 0) {
        ax_cfg_free(&lookup_table, &a.fl);
        return rc;
    }
    rc = 0;
    ax_memscan_info in;
    ax_axd_t *ds = NULL;
    ax_tokenizer_t *tok = NULL;
    ax_memscan_index_t *idx = NULL;
    ax_status st;
    AX_CHECK_GOTO(ax_memscan_index_read_info(a.index, 0, &in), fail);
    const char *data = a.data ? a.data : in.ds_path;
    st = ax_axd_open(data, 0, &ds);
    if (st != AX_OK && !a.data) {
        /* the stored path went stale (moved, another machine): say how to point at it */
        ax_error_clear();
        st = ax_errorf(st,
                       "index %s was built from %s, which cannot be opened; pass the dataset "
                       "with --data FILE.axd",
                       a.index, data);
    }
    if (st != AX_OK) goto fail;
    if (a.tok) AX_CHECK_GOTO(ax_tokenizer_load(a.tok, &tok), fail);
    if (tok) AX_CHECK_GOTO(ax_axd_check_tokenizer(ds, tok, a.tok), fail);
    if (tok && in.tok_checksum && ax_tokenizer_checksum(tok) != in.tok_checksum) {
        st = ax_errorf(AX_ERR_MISMATCH,
                       "--tokenizer %s (identity %016" PRIx64 ") is not the tokenizer index %s "
                       "was built with (%016" PRIx64 "); pass the tokenizer that encoded %s",
                       a.tok, ax_tokenizer_checksum(tok), a.index, in.tok_checksum, data);
        goto fail;
    }
    AX_CHECK_GOTO(ax_memscan_index_open(a.index, ds, &idx), fail);
    if (a.batch) {
        rc = ax_mpi_world_size() > 1 ? run_batch_ranks(&a, idx, tok) : run_batch(&a, idx, tok);
        goto out;
    }
    AX_CHECK_GOTO(answer_passage(&a, idx, tok), fail);
    goto out;
fail:
    /* a batch prints its own lines; one passage under --json gets an error object */
    if (a.json && !a.batch && ax_mpi_world_rank() == 0) put_json_error(ax_error_msg());
    rc = ax_cli_fail(SUB, st);
out:
    ax_memscan_index_free(idx);
    ax_tokenizer_free(tok);
    ax_axd_free(ds);
    ax_cfg_free(&lookup_table, &a.fl);
    return rc;
}
