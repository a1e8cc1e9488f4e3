/* The `axmem data` subcommands as library calls (data/data_run.h): tokenizer-train and encode
 * (streaming input, batching, parallel encoding, the .axd writer), decode and info. */
#include "data/data_run.h"
#include "data/axd.h"
#include "data/input.h"
#include "lib/core/progress.h"
#include "lib/core/grow.h"
#include "data/tokenizer.h"
#include "lib/core/stop.h"
#include "lib/core/timer.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BATCH_BYTES (32u << 20) /* text encoded per parallel batch */

/* tokenizer-train's progress: what was counted so far, into extra[96] */
static const char *counted(char *extra, uint64_t docs, const ax_bpe_trainer_t *tr) {
    snprintf(extra, 96, "%" PRIu64 " docs, %" PRIu64 " distinct chunks", docs,
             ax_bpe_trainer_n_chunks(tr));
    return extra;
}

ax_status ax_data_tokenizer_train(const char *const *inputs, int n_inputs, int split_lines,
                                  uint64_t vocab, uint64_t max_bytes, const char *out_path,
                                  ax_data_tokenizer_result *res) {
    ax_input_t *in = NULL;
    ax_bpe_trainer_t *tr = NULL;
    ax_tokenizer_t *tok = NULL;
    ax_status st = AX_OK;
    ax_stop_catch();
    volatile int *stop = ax_stop_flag();
    AX_CHECK_GOTO(ax_input_open(inputs, n_inputs, split_lines, &in), out);
    AX_CHECK_GOTO(ax_bpe_trainer_create(&tr), out);
    double t0 = ax_now();
    ax_progress pr;
    uint64_t total = ax_input_bytes_total(in);
    ax_progress_bytes_begin(&pr, "tokenizer-train: counting",
                            max_bytes && max_bytes < total ? max_bytes : total);
    uint64_t used = 0, docs = 0;
    char extra[96];
    for (;;) {
        const uint8_t *p;
        size_t n;
        int doc_end, eof;
        AX_CHECK_GOTO(ax_input_next(in, &p, &n, &doc_end, &eof), out);
        if (eof) break;
        if (max_bytes && used + n > max_bytes) n = (size_t)(max_bytes - used);
        AX_CHECK_GOTO(ax_bpe_trainer_add(tr, p, n), out);
        used += n;
        docs += (uint64_t)doc_end;
        if (*stop) {
            st = ax_errorf(AX_ERR_INTERRUPTED, "interrupted; nothing was written");
            goto out;
        }
        ax_progress_bytes(&pr, used, counted(extra, docs, tr));
        if (max_bytes && used >= max_bytes) break;
    }
    ax_progress_bytes_done(&pr, used, counted(extra, docs, tr));
    AX_CHECK_GOTO(ax_bpe_trainer_train(tr, (int)vocab, stop, &tok), out);
    AX_CHECK_GOTO(ax_tokenizer_save(tok, out_path), out);
    *res = (ax_data_tokenizer_result){ax_tokenizer_vocab_size(tok), ax_tokenizer_n_merges(tok),
                                      ax_tokenizer_checksum(tok), ax_now() - t0};
out:
    ax_tokenizer_free(tok);
    ax_bpe_trainer_free(tr);
    ax_input_free(in);
    return st;
}

typedef struct {
    size_t off, len;
    int doc_end;
} seg;

typedef struct {
    uint8_t *text;
    size_t len, cap;
    seg *segs;
    size_t n, scap;
    int32_t *doc; /* tokens of the document in progress (may span batches) */
    size_t doc_len, doc_cap;
} batch;

static ax_status batch_add(batch *b, const uint8_t *p, size_t n, int doc_end) {
    if (!ax_grow(&b->text, &b->cap, b->len + n, 1, BATCH_BYTES + (1u << 20)) ||
        !ax_grow(&b->segs, &b->scap, b->n + 1, sizeof *b->segs, 1024))
        return ax_errorf(AX_ERR_NOMEM, "out of memory buffering input text");
    if (n) memcpy(b->text + b->len, p, n);
    b->segs[b->n++] = (seg){b->len, n, doc_end};
    b->len += n;
    return AX_OK;
}

/* encodes the batch in parallel, then hands finished documents to the writer in order */
static ax_status batch_flush(batch *b, ax_tok_encoder_t *enc, ax_axd_writer_t *w, uint64_t *docs,
                             uint64_t *tokens) {
    ax_status st = AX_OK;
    if (!b->n) return AX_OK;
    const uint8_t **ptrs = malloc(b->n * sizeof *ptrs);
    size_t *lens = malloc(b->n * sizeof *lens), *nouts = malloc(b->n * sizeof *nouts);
    int32_t **outs = calloc(b->n, sizeof *outs);
    if (!ptrs || !lens || !nouts || !outs) {
        st = ax_errorf(AX_ERR_NOMEM, "out of memory encoding");
        goto done;
    }
    for (size_t i = 0; i < b->n; i++) {
        ptrs[i] = b->text + b->segs[i].off;
        lens[i] = b->segs[i].len;
    }
    AX_CHECK_GOTO(ax_tok_encoder_encode_many(enc, b->n, ptrs, lens, outs, nouts), done);
    for (size_t i = 0; i < b->n; i++) {
        const int32_t *toks = outs[i];
        size_t nt = nouts[i];
        if (b->doc_len || !b->segs[i].doc_end) { /* a document in several pieces */
            if (!ax_grow(&b->doc, &b->doc_cap, b->doc_len + nt, sizeof *b->doc, 1u << 16)) {
                st = ax_errorf(AX_ERR_NOMEM, "out of memory holding a document's tokens");
                goto done;
            }
            if (nt) memcpy(b->doc + b->doc_len, toks, nt * sizeof *toks);
            b->doc_len += nt;
            if (!b->segs[i].doc_end) continue;
            toks = b->doc;
            nt = b->doc_len;
            b->doc_len = 0;
        }
        AX_CHECK_GOTO(ax_axd_writer_add_doc(w, toks, nt), done);
        (*docs)++;
        *tokens += nt + 1;
    }
done:
    if (outs)
        for (size_t i = 0; i < b->n; i++) free(outs[i]);
    free(outs);
    free(ptrs);
    free(lens);
    free(nouts);
    b->n = 0;
    b->len = 0;
    return st;
}

ax_status ax_data_encode(const char *tok_path, const char *const *inputs, int n_inputs,
                         int split_lines, int threads, const char *out_path,
                         ax_data_encode_result *res) {
    ax_input_t *in = NULL;
    ax_tokenizer_t *tok = NULL;
    ax_tok_encoder_t *enc = NULL;
    ax_axd_writer_t *w = NULL;
    batch b = {0};
    ax_status st = AX_OK;
    ax_stop_catch();
    volatile int *stop = ax_stop_flag();
    AX_CHECK_GOTO(ax_tokenizer_load(tok_path, &tok), fail);
    AX_CHECK_GOTO(ax_input_open(inputs, n_inputs, split_lines, &in), fail);
    AX_CHECK_GOTO(ax_tok_encoder_create(tok, threads, &enc), fail);
    AX_CHECK_GOTO(ax_axd_writer_create(out_path, (uint32_t)ax_tokenizer_vocab_size(tok), &w), fail);
    ax_axd_writer_set_tokenizer(w, ax_tokenizer_checksum(tok));
    AX_CHECK_GOTO(ax_axd_writer_set_eot(w, ax_tokenizer_eot(tok)), fail);
    ax_progress pr;
    ax_progress_bytes_begin(&pr, "encode", ax_input_bytes_total(in));
    uint64_t docs = 0, tokens = 0, text = 0;
    for (;;) {
        const uint8_t *p;
        size_t n;
        int doc_end, eof;
        AX_CHECK_GOTO(ax_input_next(in, &p, &n, &doc_end, &eof), fail);
        if (!eof) {
            AX_CHECK_GOTO(batch_add(&b, p, n, doc_end), fail);
            text += n;
        }
        if (eof || b.len >= BATCH_BYTES) {
            AX_CHECK_GOTO(batch_flush(&b, enc, w, &docs, &tokens), fail);
            char extra[96];
            snprintf(extra, sizeof extra, "%" PRIu64 " docs, %" PRIu64 " tokens", docs, tokens);
            ax_progress_bytes(&pr, ax_input_bytes_read(in), extra);
        }
        if (*stop) {
            st = ax_errorf(AX_ERR_INTERRUPTED, "interrupted; %s was not written", out_path);
            goto fail;
        }
        if (eof) break;
    }
    AX_CHECK_GOTO(ax_axd_writer_close(w), out); /* closed either way: no abort */
    w = NULL;
    char extra[160];
    snprintf(extra, sizeof extra, "%" PRIu64 " docs, %" PRIu64 " tokens (%.2f bytes/token)", docs,
             tokens, tokens ? (double)text / (double)tokens : 0.0);
    ax_progress_bytes_done(&pr, ax_input_bytes_read(in), extra);
    *res = (ax_data_encode_result){docs, tokens, text};
    goto out;
fail:
    ax_axd_writer_abort(w);
    w = NULL;
out:
    free(b.text);
    free(b.segs);
    free(b.doc);
    ax_tok_encoder_free(enc);
    ax_tokenizer_free(tok);
    ax_input_free(in);
    return st;
}

ax_status ax_data_decode_ids(const ax_tokenizer_t *tok, const int32_t *ids, size_t n, FILE *out) {
    uint8_t *bytes;
    size_t nb;
    AX_CHECK(ax_tokenizer_decode(tok, ids, n, &bytes, &nb));
    size_t put = fwrite(bytes, 1, nb, out);
    free(bytes);
    if (put != nb) return ax_errorf(AX_ERR_IO, "writing to stdout failed: %s", strerror(errno));
    return AX_OK;
}

static ax_status decode_doc(const ax_tokenizer_t *tok, const ax_axd_t *d, uint64_t doc,
                            int32_t **buf, size_t *cap, FILE *out) {
    const uint64_t *off = ax_axd_doc_offsets(d);
    uint64_t n = off[doc + 1] - off[doc];
    if (n > *cap) {
        int32_t *nb = realloc(*buf, n * sizeof *nb);
        if (!nb) return ax_errorf(AX_ERR_NOMEM, "out of memory decoding document %" PRIu64, doc);
        *buf = nb;
        *cap = n;
    }
    ax_axd_tokens(d, off[doc], n, *buf);
    return ax_data_decode_ids(tok, *buf, (size_t)n, out);
}

ax_status ax_data_decode(const ax_tokenizer_t *tok, const char *tok_path, const char *data,
                         int64_t doc, FILE *out) {
    ax_axd_t *d = NULL;
    int32_t *ids = NULL;
    size_t cap = 0;
    ax_status st = ax_axd_open(data, AX_AXD_VERIFY, &d);
    if (st == AX_OK) st = ax_axd_check_tokenizer(d, tok, tok_path);
    uint64_t nd = st == AX_OK ? ax_axd_n_docs(d) : 0;
    if (st == AX_OK && doc >= 0 && (uint64_t)doc >= nd)
        st = ax_errorf(AX_ERR_ARG,
                       "--doc %" PRId64 ": %s has %" PRIu64 " documents (0..%" PRIu64 ")", doc,
                       data, nd, nd ? nd - 1 : 0);
    if (st == AX_OK && doc >= 0) st = decode_doc(tok, d, (uint64_t)doc, &ids, &cap, out);
    for (uint64_t i = 0; st == AX_OK && doc < 0 && i < nd; i++)
        st = decode_doc(tok, d, i, &ids, &cap, out);
    if (st == AX_OK && fflush(out) != 0)
        st = ax_errorf(AX_ERR_IO, "writing to stdout failed: %s", strerror(errno));
    free(ids);
    ax_axd_free(d);
    return st;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

ax_status ax_data_info_read(const char *path, int verify, ax_data_info *o) {
    memset(o, 0, sizeof *o);
    ax_axd_t *d = NULL;
    /* info is the explicit check: it rehashes even a file the cache says was verified */
    AX_CHECK(ax_axd_open(path, verify ? AX_AXD_VERIFY_REHASH : AX_AXD_HEADER_ONLY, &d));
    o->docs = ax_axd_n_docs(d), o->tokens = ax_axd_n_tokens(d);
    o->vocab = ax_axd_vocab_size(d), o->eot = ax_axd_eot(d);
    o->checksum = ax_axd_checksum(d), o->tok_checksum = ax_axd_tokenizer_checksum(d);
    o->version = o->eot != AX_TOK_EOT ? 3 : o->tok_checksum ? 2 : 1;
    o->token_bytes = o->vocab <= 65536 ? 2 : 4;
    ax_status st = AX_OK;
    uint64_t nd = o->docs, *lens = nd ? malloc(nd * sizeof *lens) : NULL;
    if (nd && !lens) {
        st = ax_errorf(AX_ERR_NOMEM, "out of memory for %" PRIu64 " document lengths", nd);
    } else if (nd) {
        const uint64_t *off = ax_axd_doc_offsets(d);
        for (uint64_t i = 0; i < nd; i++) lens[i] = off[i + 1] - off[i];
        qsort(lens, nd, sizeof *lens, cmp_u64);
        o->len_min = lens[0], o->len_median = lens[nd / 2];
        o->len_p99 = lens[(nd - 1) * 99 / 100], o->len_max = lens[nd - 1];
        o->len_mean = (double)o->tokens / (double)nd;
    }
    free(lens);
    ax_axd_free(d);
    return st;
}
