/* `axmem memscan lookup` as a library call (index/lookup_run.h). */
#include "index/lookup_run.h"
#include "lib/core/fsutil.h"
#include "lib/dist/comm.h"
#include "lib/dist/grid.h"
#include "lib/dist/mpienv.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

ax_status ax_lookup_open(ax_lookup *L, const char *index, const char *data, const char *tok_path) {
    ax_lookup keep = *L; /* the caller's settings */
    memset(L, 0, sizeof *L);
    L->index = index, L->max_sources = keep.max_sources, L->max_occ = keep.max_occ;
    AX_CHECK(ax_memscan_index_read_info(index, 0, &L->info));
    if (!data) data = L->info.ds_path;
    ax_status st = ax_axd_open(data, 0, &L->ds);
    if (st != AX_OK && data == L->info.ds_path) {
        /* the stored path went stale (moved, another machine): say how to point at it */
        ax_error_clear();
        return ax_errorf(st,
                         "index %s was built from %s, which cannot be opened; pass the dataset "
                         "with --data FILE.axd",
                         index, data);
    }
    AX_CHECK(st);
    if (tok_path) AX_CHECK(ax_tokenizer_load(tok_path, &L->tok));
    if (L->tok) AX_CHECK(ax_axd_check_tokenizer(L->ds, L->tok, tok_path));
    if (L->tok && L->info.tok_checksum && ax_tokenizer_checksum(L->tok) != L->info.tok_checksum)
        return ax_errorf(AX_ERR_MISMATCH,
                         "--tokenizer %s (identity %016" PRIx64 ") is not the tokenizer index %s "
                         "was built with (%016" PRIx64 "); pass the tokenizer that encoded %s",
                         tok_path, ax_tokenizer_checksum(L->tok), index, L->info.tok_checksum,
                         data);
    return ax_memscan_index_open(index, L->ds, &L->idx);
}

void ax_lookup_close(ax_lookup *L) {
    ax_memscan_index_free(L->idx);
    ax_tokenizer_free(L->tok);
    ax_axd_free(L->ds);
    L->idx = NULL, L->tok = NULL, L->ds = NULL;
}

/* an answer's per-window arrays for its tokens */
static ax_status alloc_windows(const ax_lookup *L, ax_lookup_answer *an) {
    an->W = an->len >= L->info.n ? an->len - L->info.n + 1 : 0;
    an->cnt = malloc(sizeof *an->cnt * (an->W + 1));
    an->first = malloc(sizeof *an->first * (an->W + 1));
    return an->cnt && an->first ? AX_OK : ax_errorf(AX_ERR_NOMEM, "out of memory");
}

ax_status ax_lookup_passage(const ax_lookup *L, const char *text, size_t n, ax_lookup_answer *an) {
    memset(an, 0, sizeof *an);
    AX_CHECK(ax_tokenizer_encode(L->tok, (const uint8_t *)text, n, &an->t, &an->len));
    AX_CHECK(ax_memscan_find_spans_occ(L->idx, an->t, an->len, L->max_sources, L->max_occ, &an->sp,
                                       &an->ns));
    AX_CHECK(alloc_windows(L, an));
    ax_memscan_index_lookup_all(L->idx, an->t, an->len, an->cnt, an->first);
    return AX_OK;
}

void ax_lookup_answer_free(ax_lookup_answer *an) {
    free(an->t), free(an->sp), free(an->cnt), free(an->first);
    memset(an, 0, sizeof *an);
}

ax_status ax_lookup_window_places(const ax_lookup *L, uint64_t first, uint32_t count,
                                  ax_lookup_places *b, size_t *listed, uint64_t *total) {
    const ax_memscan_index_t *idx = L->idx;
    uint64_t max = L->max_occ;
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
        ax_jw_key(w, "doc"), ax_jw_uint(w, p[k].doc);
        ax_jw_key(w, "offset"), ax_jw_uint(w, p[k].doc_off);
        ax_jw_key(w, "pos"), ax_jw_uint(w, p[k].pos);
        ax_jw_obj_end(w);
    }
    ax_jw_arr_end(w);
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
    ax_jw_key(w, "start"), ax_jw_uint(w, s->start);
    ax_jw_key(w, "len"), ax_jw_uint(w, s->len);
    ax_jw_key(w, "doc"), ax_jw_uint(w, s->doc);
    ax_jw_key(w, "offset"), ax_jw_uint(w, s->doc_off);
    ax_jw_key(w, "pos"), ax_jw_uint(w, s->pos);
    ax_jw_key(w, "occurrences"), ax_jw_uint(w, s->occurrences);
    ax_jw_key(w, "sources"), ax_jw_uint(w, s->docs);
    ax_jw_key(w, "docs");
    ax_jw_arr_begin(w);
    for (size_t d = 0; d < s->n_sources; d++) {
        ax_jw_obj_begin(w);
        ax_jw_key(w, "doc"), ax_jw_uint(w, s->sources[d].doc);
        ax_jw_key(w, "offset"), ax_jw_uint(w, s->sources[d].doc_off);
        ax_jw_obj_end(w);
    }
    ax_jw_arr_end(w);
    if (places) jw_places(w, s->occ, s->n_occ);
    ax_jw_key(w, "count_min"), ax_jw_uint(w, s->count_min);
    ax_jw_key(w, "count_max"), ax_jw_uint(w, s->count_max);
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
    ax_jw_key(w, "line"), ax_jw_uint(w, q->line);
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

/* an answer's JSON object, tagged with its batch line and id (q NULL: none) */
static ax_status answer_json(const ax_lookup *L, const ax_lookup_answer *an, const query_tag *q,
                             ax_jw *w) {
    const ax_memscan_index_t *idx = L->idx;
    const int32_t *t = an->t;
    const ax_memscan_span *sp = an->sp;
    const uint32_t *cnt = an->cnt;
    const uint64_t *first = an->first;
    size_t len = an->len, ns = an->ns, W = an->W;
    ax_lookup_places pb = {NULL, 0};
    ax_status st = AX_OK;
    int places = L->max_occ > 0;
    const ax_memscan_info *in = ax_memscan_index_info(idx);
    const ax_axd_t *ds = ax_memscan_index_dataset(idx);
    const uint64_t *off = ax_axd_doc_offsets(ds);
    size_t found = 0;
    for (size_t i = 0; i < W; i++) found += cnt[i] > 0;
    ax_jw_obj_begin(w);
    jw_query_tag(w, q);
    ax_jw_key(w, "index"), ax_jw_str(w, L->index);
    ax_jw_key(w, "dataset"), ax_jw_str(w, ax_axd_path(ds));
    ax_jw_key(w, "n"), ax_jw_uint(w, in->n);
    ax_jw_key(w, "tokens"), ax_jw_uint(w, len);
    ax_jw_key(w, "windows"), ax_jw_uint(w, W);
    ax_jw_key(w, "windows_found"), ax_jw_uint(w, found);
    ax_jw_key(w, "longest");
    if (ns)
        jw_span(w, &sp[0], L->tok, t, places);
    else
        ax_jw_null(w);
    ax_jw_key(w, "spans");
    ax_jw_arr_begin(w);
    for (size_t i = 0; i < ns; i++) jw_span(w, &sp[i], L->tok, t, places);
    ax_jw_arr_end(w);
    ax_jw_key(w, "matching_windows");
    ax_jw_arr_begin(w);
    for (size_t i = 0; i < W; i++) {
        if (!cnt[i]) continue;
        uint64_t d = ax_axd_doc_of(ds, first[i]);
        const uint64_t *list;
        ax_jw_obj_begin(w);
        ax_jw_key(w, "start"), ax_jw_uint(w, i);
        ax_jw_key(w, "count"),
            ax_jw_uint(w, ax_memscan_index_occurrences(idx, first[i], cnt[i], &list));
        ax_jw_key(w, "doc"), ax_jw_uint(w, d);
        ax_jw_key(w, "offset"), ax_jw_uint(w, first[i] - off[d]);
        if (places) {
            size_t listed = 0;
            uint64_t total = 0;
            if ((st = ax_lookup_window_places(L, first[i], cnt[i], &pb, &listed, &total)) != AX_OK)
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

ax_status ax_lookup_answer_json(const ax_lookup *L, const ax_lookup_answer *a, ax_jw *w) {
    return answer_json(L, a, NULL, w);
}

ax_status ax_lookup_damaged(const ax_lookup *L) {
    const char *index = L->index;
    return ax_errorf(AX_ERR_CORRUPT,
                     "index %s is damaged where this query's windows lie (a page fails its "
                     "checksum), so it has no answer; `axmem memscan info --verify %s` names the "
                     "damage; rebuild the index with `axmem memscan index`",
                     index, index);
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
static ax_status answer_tokens(const ax_lookup *L, const int32_t *t, size_t len,
                               const given_lookups *g, const query_tag *qt, FILE *out) {
    const ax_memscan_index_t *idx = L->idx;
    ax_lookup_answer an = {.t = (int32_t *)t, .len = len};
    uint64_t met = ax_memscan_index_damage_met(idx);
    int damaged = 0;
    ax_jw w;
    ax_jw_init(&w);
    ax_status st = alloc_windows(L, &an);
    if (st == AX_OK) {
        if (g) {
            if (an.W) memcpy(an.cnt, g->cnt, sizeof *an.cnt * an.W);
            if (an.W) memcpy(an.first, g->first, sizeof *an.first * an.W);
            for (size_t i = 0; i < an.W; i++) damaged |= g->damaged[i];
        } else {
            ax_memscan_index_lookup_all(idx, t, len, an.cnt, an.first);
        }
        st = ax_memscan_find_spans_given(idx, t, len, an.cnt, an.first, L->max_sources, L->max_occ,
                                         &an.sp, &an.ns);
    }
    if (st == AX_OK) st = answer_json(L, &an, qt, &w);
    if (st == AX_OK && (damaged || ax_memscan_index_damage_met(idx) != met))
        st = ax_lookup_damaged(L);
    if (st == AX_OK) fprintf(out, "%s\n", ax_jw_text(&w));
    ax_jw_free(&w);
    an.t = NULL; /* the caller's */
    ax_lookup_answer_free(&an);
    return st;
}

/* A query line -> its parsed object (for its id) and tokens. */
static ax_status parse_query(const ax_lookup *L, const char *line, size_t n, ax_json **q,
                             int32_t **t, size_t *len) {
    *t = NULL;
    *len = 0;
    AX_CHECK(ax_json_parse(line, n, "the query", q));
    return query_tokens(*q, L->tok, L->info.vocab, t, len);
}

static ax_status answer_query(const ax_lookup *L, const char *line, size_t n,
                              const query_tag *qt_in, FILE *out) {
    ax_json *q = NULL;
    int32_t *t = NULL;
    size_t len = 0;
    query_tag qt = *qt_in;
    ax_status st = parse_query(L, line, n, &q, &t, &len);
    if (q) qt.id = ax_json_get(q, "id");
    if (st == AX_OK) st = answer_tokens(L, t, len, NULL, &qt, out);
    free(t);
    ax_json_free(q);
    return st;
}

/* {"line": N, "error": "FILE line N: message"} */
static void put_error_line(const char *file, uint64_t lineno, const char *why, FILE *out) {
    ax_jw w;
    ax_jw_init(&w);
    ax_jw_obj_begin(&w);
    ax_jw_key(&w, "line"), ax_jw_uint(&w, lineno);
    ax_jw_key(&w, "error");
    char msg[1200];
    snprintf(msg, sizeof msg, "%s line %llu: %s", file, (unsigned long long)lineno, why);
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

/* the batch on one process */
static ax_status batch_serial(const ax_lookup *L, const char *file, uint64_t *n_failed,
                              uint64_t *n_queries) {
    FILE *f;
    AX_CHECK(ax_fopen_regular(file, "pass a file of JSON queries, one a line", &f));
    char *line = NULL;
    size_t cap = 0, n;
    uint64_t lineno = 0;
    while (next_query(f, &line, &cap, &lineno, &n)) {
        ++*n_queries;
        query_tag qt = {lineno, NULL};
        ax_error_clear();
        if (answer_query(L, line, n, &qt, stdout) == AX_OK) continue;
        ++*n_failed;
        put_error_line(file, lineno, ax_error_msg(), stdout);
    }
    int read_err = ferror(f);
    fclose(f);
    free(line);
    fflush(stdout);
    if (read_err) return ax_errorf(AX_ERR_IO, "%s: read error", file);
    /* damage fails the queries that met it (above); this only backs that up */
    ax_status st = ax_memscan_index_check(L->idx);
    return *n_failed ? AX_OK : st;
}

/* A batch under mpirun: every rank opened the index; rank r answers the r-th
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

static ax_status block_read(const char *file, block_query **out, size_t *n_out, uint64_t *n_all) {
    FILE *f;
    AX_CHECK(ax_fopen_regular(file, "pass a file of JSON queries, one a line", &f));
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
    if (st == AX_OK && ferror(f)) st = ax_errorf(AX_ERR_IO, "%s: read error", file);
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

static ax_status batch_ranks(const ax_lookup *L, const char *file, uint64_t *n_failed,
                             uint64_t *total) {
    const size_t n = L->info.n;
    block_query *b = NULL;
    size_t m = 0, nw = 0;
    int32_t *win = NULL;
    uint32_t *cnt = NULL;
    uint64_t *first = NULL;
    uint8_t *dmg = NULL;
    char *text = NULL;
    size_t text_len = 0;
    ax_grid_t *g = NULL;
    ax_status st = ax_grid_create_world(&g);
    if (st == AX_OK) st = block_read(file, &b, &m, total);
    /* parse and tokenize; a bad query keeps its message and has no windows */
    for (size_t i = 0; st == AX_OK && i < m; i++) {
        block_query *q = &b[i];
        ax_error_clear();
        ax_status qs = parse_query(L, q->line, q->n, &q->q, &q->t, &q->len);
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
    if (st == AX_OK) st = ax_memscan_index_lookup_routed(L->idx, win, nw, cnt, first, dmg);
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
        if (!q->err && answer_tokens(L, q->t, q->len, &gl, &qt, out) == AX_OK) continue;
        ++*n_failed;
        put_error_line(file, q->lineno, q->err ? q->err : ax_error_msg(), out);
    }
    if (out) fclose(out);
    /* damage fails the queries that met it (error lines above), not the whole batch */
    st = ax_coll_agree(g, AX_AXIS_WORLD, st, "memscan lookup batch");
    if (st == AX_OK) st = gather_print(g, text ? text : "", text ? text_len : 0);
    if (st == AX_OK) st = ax_coll_allreduce(g, AX_AXIS_WORLD, n_failed, 1, AX_DT_U64, AX_OP_SUM);
    free(text);
    free(win);
    free(cnt);
    free(first);
    free(dmg);
    block_free(b, m);
    ax_grid_free(g);
    return st;
}

ax_status ax_lookup_batch(const ax_lookup *L, const char *file, uint64_t *n_failed,
                          uint64_t *n_queries) {
    *n_failed = *n_queries = 0;
    return ax_mpi_world_size() > 1 ? batch_ranks(L, file, n_failed, n_queries)
                                   : batch_serial(L, file, n_failed, n_queries);
}
