/* `axmem memscan lookup`: is this passage in the training data? Tokenizes the passage, finds
 * its verbatim spans of >= n tokens in the index, and prints the longest one with its text, the
 * count of every matching window and the source documents. */
#include "cli/commands.h"
#include "index/lookup_run.h"
#include "lib/core/cliargs.h"
#include "lib/core/fsutil.h"
#include "lib/dist/mpienv.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *CMD = "memscan lookup";

typedef struct {
    char index[AX_CFG_STR_MAX], tokenizer[AX_CFG_STR_MAX], data[AX_CFG_STR_MAX],
        file[AX_CFG_STR_MAX];
    int json;
    int64_t max_windows, max_sources, occurrences;
    ax_cfg_strlist text;
} lookup_flags;

#define F(field) offsetof(lookup_flags, field)
static const ax_cfg_entry lookup_entries[] = {
    AX_CFG_INDEX_ENTRY(F, "index from `axmem memscan index` (required)"),
    AX_CFG_TOKENIZER_ENTRY(
        F, "tokenizer the dataset was encoded with (required, except for a batch of token ids)"),
    AX_CFG_DATA_ENTRY(F, "the dataset (.axd; empty: the path stored in the index)"),
    {"file", AX_CFG_STR, F(file), "", 1, 0,
     "read the passage from F instead of the TEXT argument; F.jsonl: a batch, one query a "
     "line ({\"tokens\": [ids]} or {\"text\": \"...\"}, optional \"id\"), one JSON "
     "answer a line"},
    AX_CFG_JSON_ENTRY(F, "one JSON object on stdout"),
    {"max-windows", AX_CFG_INT, F(max_windows), "50", 0, 9.2e18,
     "list at most N matching windows in text output"},
    {"max-sources", AX_CFG_INT, F(max_sources), "8", 0, 1e6,
     "documents listed per span (all are counted)"},
    {"occurrences", AX_CFG_INT, F(occurrences), "0", 0, 1e9,
     "list up to N places (document, offset) of every span and matching window, from the "
     "occurrence lists (all are counted; 0: none)"},
};
#undef F
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

static void put_places(FILE *out, const ax_memscan_source *p, size_t n, uint64_t total) {
    fprintf(out, "    at:");
    for (size_t k = 0; k < n; k++)
        fprintf(out, " doc %" PRIu64 " +%" PRIu64, p[k].doc, p[k].doc_off);
    if (total > n) fprintf(out, " ... %" PRIu64 " more (--occurrences N)", total - n);
    fprintf(out, "\n");
}

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

static int parse(int argc, char **argv, lookup_args *a) {
    memset(a, 0, sizeof *a);
    int rc = ax_cli_parse(CMD, &lookup_table, &a->fl, argc, argv, NULL);
    if (rc >= 0) return rc;
    lookup_flags *f = &a->fl;
    a->index = f->index[0] ? f->index : NULL;
    a->tok = f->tokenizer[0] ? f->tokenizer : NULL;
    a->data = f->data[0] ? f->data : NULL;
    a->file = f->file[0] ? f->file : NULL;
    a->text = f->text.n ? f->text.v[0] : NULL;
    a->json = f->json;
    a->max_windows = (uint64_t)f->max_windows;
    a->max_sources = (size_t)f->max_sources;
    a->max_occ = (uint64_t)f->occurrences;
    a->batch = a->file && ends_with(a->file, ".jsonl");
    if (!a->index) return ax_cli_usage(CMD, "%s", "--index INDEX is required");
    if (!a->tok && !a->batch) return ax_cli_usage(CMD, "%s", "--tokenizer TOK is required");
    if (!a->text && !a->file)
        return ax_cli_usage(CMD, "%s", "a TEXT argument or --file F is required");
    if (a->text && a->file) return ax_cli_usage(CMD, "%s", "give TEXT or --file, not both");
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

static ax_status print_text(const lookup_args *a, const ax_lookup *L, const ax_lookup_answer *an,
                            FILE *out) {
    const ax_memscan_info *in = &L->info;
    const ax_memscan_span *sp = an->sp;
    const uint32_t *cnt = an->cnt;
    const uint64_t *first = an->first;
    size_t len = an->len, ns = an->ns, W = an->W;
    const ax_axd_t *ds = L->ds;
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
    const ax_memscan_span *top = &sp[0];
    fprintf(out,
            "longest verbatim span: %zu tokens (passage tokens %zu-%zu), in %" PRIu64
            " document%s (%" PRIu64 " place%s); first in document %" PRIu64
            " at token offset %" PRIu64 "\n",
            top->len, top->start, top->start + top->len, top->docs, top->docs == 1 ? "" : "s",
            top->occurrences, top->occurrences == 1 ? "" : "s", top->doc, top->doc_off);
    if (top->n_sources > 1) {
        fprintf(out, "  documents:");
        for (size_t d = 0; d < top->n_sources; d++)
            fprintf(out, " %" PRIu64 " +%" PRIu64, top->sources[d].doc, top->sources[d].doc_off);
        if (top->docs > top->n_sources)
            fprintf(out, " ... %" PRIu64 " more (--max-sources N)", top->docs - top->n_sources);
        fprintf(out, "\n");
    }
    if (top->count_min == top->count_max)
        fprintf(out, "  each of its windows occurs %" PRIu64 " time%s in the training data\n",
                top->count_min, top->count_min == 1 ? "" : "s");
    else
        fprintf(out, "  its windows occur %" PRIu64 " to %" PRIu64 " times in the training data\n",
                top->count_min, top->count_max);
    fprintf(out, "  text: ");
    put_text(out, L->tok, an->t + top->start, top->len);
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
    ax_lookup_places pb = {NULL, 0};
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
                ax_memscan_index_occurrences(L->idx, first[i], cnt[i], &list), d,
                first[i] - off[d]);
        shown++;
        if (a->max_occ) {
            size_t listed = 0;
            uint64_t total = 0;
            if ((st = ax_lookup_window_places(L, first[i], cnt[i], &pb, &listed, &total)) != AX_OK)
                break;
            put_places(out, pb.v, listed, total);
        }
    }
    free(pb.v);
    return st;
}

static int batch_summary(const char *file, uint64_t n_failed, uint64_t n_queries) {
    if (!n_failed) return 0;
    if (ax_mpi_world_rank() == 0)
        fprintf(stderr,
                "axmem memscan lookup: %llu of %llu queries in %s failed (see their "
                "\"error\" lines)\n",
                (unsigned long long)n_failed, (unsigned long long)n_queries, file);
    return 1;
}

/* One passage (TEXT or --file F): the answer is written to a buffer and printed only when the
 * whole lookup succeeded, so a failure (a damaged index page met on the way) prints no answer. */
static ax_status answer_passage(const lookup_args *a, const ax_lookup *L) {
    char *text = NULL, *ans = NULL;
    size_t text_len = 0, ans_len = 0;
    FILE *out = NULL;
    ax_lookup_answer an = {0};
    ax_jw w;
    ax_jw_init(&w);
    uint64_t met = ax_memscan_index_damage_met(L->idx);
    ax_status st = AX_OK;
    if (a->file)
        st = ax_read_file(a->file, &text, &text_len);
    else if (!(text = strdup(a->text)))
        st = ax_errorf(AX_ERR_NOMEM, "out of memory");
    else
        text_len = strlen(text);
    if (st == AX_OK) st = ax_lookup_passage(L, text, text_len, &an);
    if (st == AX_OK && !(out = open_memstream(&ans, &ans_len)))
        st = ax_errorf(AX_ERR_NOMEM, "out of memory");
    if (st == AX_OK && a->json) {
        st = ax_lookup_answer_json(L, &an, &w);
        if (st == AX_OK) fprintf(out, "%s\n", ax_jw_text(&w));
    } else if (st == AX_OK) {
        st = print_text(a, L, &an, out);
    }
    if (out && fclose(out) != 0 && st == AX_OK)
        st = ax_errorf(AX_ERR_NOMEM, "out of memory for the answer");
    /* damage met on the way (pages are verified as lookups touch them): no answer */
    if (st == AX_OK && ax_memscan_index_damage_met(L->idx) != met) st = ax_lookup_damaged(L);
    if (st == AX_OK) st = ax_memscan_index_check(L->idx);
    if (st == AX_OK) {
        fwrite(ans, 1, ans_len, stdout);
        fflush(stdout);
    }
    free(ans);
    free(text);
    ax_jw_free(&w);
    ax_lookup_answer_free(&an);
    return st;
}

/* --json: a failure is one JSON object {"error": "..."} on stdout (besides the line on stderr),
 * so a script reading stdout never takes it for an answer */
static void put_json_error(const char *why) {
    ax_jw w;
    ax_jw_init(&w);
    ax_jw_obj_begin(&w);
    ax_jw_key(&w, "error"), ax_jw_str(&w, why);
    ax_jw_obj_end(&w);
    if (ax_jw_text(&w)) printf("%s\n", ax_jw_text(&w));
    fflush(stdout);
    ax_jw_free(&w);
}

int ax_cmd_memscan_lookup(int argc, char **argv) {
    lookup_args a;
    int rc = parse(argc, argv, &a);
    if (rc >= 0) {
        ax_cfg_free(&lookup_table, &a.fl);
        return rc;
    }
    ax_lookup L = {.max_sources = a.max_sources, .max_occ = a.max_occ};
    ax_status st = ax_lookup_open(&L, a.index, a.data, a.tok);
    if (st == AX_OK && a.batch) {
        uint64_t n_failed, n_queries;
        st = ax_lookup_batch(&L, a.file, &n_failed, &n_queries);
        if (st == AX_OK) rc = batch_summary(a.file, n_failed, n_queries);
    } else if (st == AX_OK) {
        st = answer_passage(&a, &L);
        if (st == AX_OK) rc = 0;
    }
    if (st != AX_OK) {
        /* a batch prints its own lines; one passage under --json gets an error object */
        if (a.json && !a.batch && ax_mpi_world_rank() == 0) put_json_error(ax_error_msg());
        rc = ax_cli_fail(CMD, st);
    }
    ax_lookup_close(&L);
    ax_cfg_free(&lookup_table, &a.fl);
    return rc;
}
