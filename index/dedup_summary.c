/* The summary of `data dedup` (index/dedup_summary.h). */
#include "index/dedup_summary.h"

#include "lib/core/fsutil.h"
#include "lib/core/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the span's first `max` tokens decoded (malloc'd, *len bytes, cut at a character) */
static ax_status span_text(const ax_axd_t *ds, const ax_tokenizer_t *tok, const ax_dedup_span *s,
                           size_t max, char **text, size_t *len) {
    size_t k = s->len < max ? (size_t)s->len : max;
    int32_t *ids = malloc(sizeof *ids * (k ? k : 1));
    if (!ids) return ax_errorf(AX_ERR_NOMEM, "data dedup: out of memory");
    ax_axd_tokens(ds, s->first, k, ids);
    uint8_t *out = NULL;
    size_t n = 0;
    ax_status st = ax_tokenizer_decode(tok, ids, k, &out, &n);
    free(ids);
    if (st != AX_OK) return st;
    size_t at;
    n = ax_utf8_clip((const char *)out, n, &at);
    memmove(out, out + at, n);
    *text = (char *)out;
    *len = n;
    return AX_OK;
}

/* the span's first `max` ids as "1 2 3" into buf */
static void span_ids(const ax_axd_t *ds, const ax_dedup_span *s, size_t max, char *buf,
                     size_t cap) {
    size_t k = s->len < max ? (size_t)s->len : max, at = 0;
    buf[0] = 0;
    for (size_t i = 0; i < k && at + 12 < cap; i++)
        at += (size_t)snprintf(buf + at, cap - at, "%s%u", i ? " " : "",
                               ax_axd_token(ds, s->first + i));
}

ax_status ax_dedup_previews(const ax_axd_t *ds, const ax_tokenizer_t *tok, ax_dedup_result *r) {
    for (size_t i = 0; i < r->n_spans; i++) {
        ax_dedup_span *s = &r->spans[i];
        if (!tok) {
            span_ids(ds, s, 16, s->preview, sizeof s->preview);
            continue;
        }
        char *text;
        size_t len;
        ax_status st = span_text(ds, tok, s, 64, &text, &len);
        if (st != AX_OK) return st;
        /* one line: control characters as spaces, cut at a character */
        size_t keep = 0, cap = sizeof s->preview - 1;
        while (keep < len) {
            size_t cl = 1;
            if ((unsigned char)text[keep] >= 0x80 && !ax_utf8_next(text + keep, len - keep, &cl))
                cl = 1;
            if (keep + cl > cap) break;
            keep += cl;
        }
        for (size_t j = 0; j < keep; j++)
            s->preview[j] = (unsigned char)text[j] < 0x20 ? ' ' : text[j];
        s->preview[keep] = 0;
        free(text);
    }
    return AX_OK;
}

static void put_u(ax_jw *w, const char *key, uint64_t v) {
    ax_jw_key(w, key);
    ax_jw_uint(w, v);
}

ax_status ax_dedup_write_summary(const ax_dedup_opts *o, const ax_axd_t *ds,
                                 const ax_tokenizer_t *tok, const ax_dedup_result *r) {
    ax_jw w;
    ax_jw_init(&w);
    ax_jw_obj_begin(&w);
    ax_jw_key(&w, "format");
    ax_jw_str(&w, "axmem-dedup");
    put_u(&w, "version", 1);
    ax_jw_key(&w, "input");
    ax_jw_str(&w, o->input);
    ax_jw_key(&w, "input_xxh3");
    char hex[20];
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)ax_axd_checksum(ds));
    ax_jw_str(&w, hex);
    ax_jw_key(&w, "output");
    ax_jw_str(&w, o->out);
    put_u(&w, "n", (uint64_t)o->n);
    ax_jw_key(&w, "drop_duplicate_documents");
    ax_jw_bool(&w, o->documents);
    put_u(&w, "hash_bits", (uint64_t)o->hash_bits);
    put_u(&w, "seed", o->seed);
    put_u(&w, "ranks", (uint64_t)r->ranks);
    ax_jw_key(&w, "spilled");
    ax_jw_bool(&w, r->spilled);

    ax_jw_key(&w, "tokens");
    ax_jw_obj_begin(&w);
    put_u(&w, "before", r->tokens_before);
    put_u(&w, "after", r->tokens_after);
    put_u(&w, "removed", r->tokens_before - r->tokens_after);
    put_u(&w, "in_repeated_spans", r->span_tokens);
    put_u(&w, "in_duplicate_documents", r->dup_doc_tokens);
    ax_jw_obj_end(&w);

    ax_jw_key(&w, "documents");
    ax_jw_obj_begin(&w);
    put_u(&w, "before", r->docs_before);
    put_u(&w, "after", r->docs_after);
    put_u(&w, "removed", r->docs_before - r->docs_after);
    put_u(&w, "duplicates", r->dup_docs);
    put_u(&w, "emptied", r->emptied_docs);
    ax_jw_obj_end(&w);

    if (o->n > 0) {
        ax_jw_key(&w, "windows");
        ax_jw_obj_begin(&w);
        put_u(&w, "total", r->windows);
        put_u(&w, "distinct", r->distinct);
        put_u(&w, "repeated_distinct", r->repeated);
        put_u(&w, "repeats", r->windows - r->distinct);
        ax_jw_obj_end(&w);
    }

    ax_status st = AX_OK;
    ax_jw_key(&w, "top_spans");
    ax_jw_arr_begin(&w);
    for (size_t i = 0; i < r->n_spans && st == AX_OK; i++) {
        const ax_dedup_span *s = &r->spans[i];
        ax_jw_obj_begin(&w);
        put_u(&w, "count", s->count);
        put_u(&w, "tokens", s->len);
        put_u(&w, "first", s->first);
        put_u(&w, "doc", s->doc);
        put_u(&w, "offset", s->offset);
        size_t max = tok ? AX_DEDUP_TEXT_TOKENS : AX_DEDUP_ID_TOKENS;
        if (tok) {
            char *text;
            size_t len;
            st = span_text(ds, tok, s, max, &text, &len);
            if (st == AX_OK) {
                ax_jw_key(&w, "text");
                ax_jw_strn(&w, text, len);
                free(text);
            }
        } else {
            ax_jw_key(&w, "ids");
            ax_jw_arr_begin(&w);
            for (uint64_t j = 0; j < s->len && j < max; j++)
                ax_jw_uint(&w, ax_axd_token(ds, s->first + j));
            ax_jw_arr_end(&w);
        }
        ax_jw_key(&w, "truncated");
        ax_jw_bool(&w, s->len > max);
        ax_jw_obj_end(&w);
    }
    ax_jw_arr_end(&w);

    ax_jw_key(&w, "seconds");
    ax_jw_obj_begin(&w);
    ax_jw_key(&w, "index");
    ax_jw_num(&w, r->index_s);
    ax_jw_key(&w, "total");
    ax_jw_num(&w, r->total_s);
    ax_jw_obj_end(&w);
    ax_jw_obj_end(&w);
    if (st == AX_OK) st = ax_write_text_atomic(r->summary, ax_jw_text(&w), 1);
    ax_jw_free(&w);
    return st;
}
