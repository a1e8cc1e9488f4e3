/* Member / non-member splits: see split.h. */
#include "data/split.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

#include "data/axd.h"
#include "lib/core/keyset.h"
#include "lib/core/rng.h"

int ax_data_same_file(const char *a, const char *b) {
    if (strcmp(a, b) == 0) return 1;
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

static uint64_t key_of(const int32_t *t, int n) {
    /* ids as little-endian int32, as goldfish hashes them (this host is little-endian) */
    uint64_t h = XXH3_64bits(t, (size_t)n * sizeof *t);
    return h ? h : 1; /* 0 marks an empty slot */
}

/* document d's tokens without its end-of-text: [off[d], off[d+1] - 1) */
static uint64_t content_len(const uint64_t *off, uint64_t d) {
    uint64_t n = off[d + 1] - off[d];
    return n ? n - 1 : 0;
}

static ax_status read_doc(const ax_axd_t *ds, uint64_t d, int32_t **buf, uint64_t *cap) {
    const uint64_t *off = ax_axd_doc_offsets(ds);
    uint64_t n = off[d + 1] - off[d];
    if (n > *cap) {
        int32_t *nb = realloc(*buf, (size_t)n * sizeof *nb);
        if (!nb) return ax_errorf(AX_ERR_NOMEM, "out of memory reading document %" PRIu64, d);
        *buf = nb;
        *cap = n;
    }
    ax_axd_tokens(ds, off[d], n, *buf);
    return AX_OK;
}

static ax_status check_config(const char *input, const char *out_train, const char *out_holdout,
                              const ax_split_config *c) {
    if (!(c->holdout > 0 && c->holdout < 1))
        return ax_errorf(AX_ERR_ARG, "--holdout %g: give a fraction strictly between 0 and 1",
                         c->holdout);
    if (c->ngram < 1)
        return ax_errorf(AX_ERR_ARG, "--ngram %d: give a window of at least 1 token", c->ngram);
    if (ax_data_same_file(input, out_train) || ax_data_same_file(input, out_holdout))
        return ax_errorf(AX_ERR_ARG,
                         "--out-train/--out-holdout must not be the input %s; name new files",
                         input);
    if (ax_data_same_file(out_train, out_holdout))
        return ax_errorf(AX_ERR_ARG, "--out-train and --out-holdout are the same file (%s)",
                         out_train);
    return AX_OK;
}

ax_status ax_data_split(const char *input, const char *out_train, const char *out_holdout,
                        const ax_split_config *c, ax_split_result *r) {
    memset(r, 0, sizeof *r);
    AX_CHECK(check_config(input, out_train, out_holdout, c));
    ax_status st = AX_OK;
    ax_axd_t *ds = NULL;
    ax_axd_writer_t *wt = NULL, *wh = NULL;
    uint64_t *perm = NULL, cap = 0;
    uint8_t *held = NULL;
    int32_t *buf = NULL;
    ax_keyset set = {0};
    AX_CHECK_GOTO(ax_axd_open(input, AX_AXD_VERIFY, &ds), fail);
    const uint64_t nd = ax_axd_n_docs(ds), *off = ax_axd_doc_offsets(ds);
    r->docs = nd;
    r->tokens = ax_axd_n_tokens(ds);
    r->drawn_docs = (uint64_t)llround(c->holdout * (double)nd);
    if (r->drawn_docs == 0 || r->drawn_docs >= nd) {
        st = ax_errorf(AX_ERR_ARG,
                       "--holdout %g of %s's %" PRIu64 " documents draws %" PRIu64
                       "; each set needs at least one document (change --holdout)",
                       c->holdout, input, nd, r->drawn_docs);
        goto fail;
    }
    /* the draw: the first drawn_docs of a seeded partial Fisher-Yates shuffle */
    perm = malloc((size_t)nd * sizeof *perm);
    held = calloc((size_t)nd, 1);
    if (!perm || !held) {
        st = ax_errorf(AX_ERR_NOMEM, "out of memory for %" PRIu64 " documents", nd);
        goto fail;
    }
    for (uint64_t i = 0; i < nd; i++) perm[i] = i;
    for (uint64_t i = 0; i < r->drawn_docs; i++) {
        uint64_t j = i + ax_rng_below(c->seed, 0x5b17, i, nd - i);
        uint64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
        held[perm[i]] = 1;
    }
    /* size the n-gram set before allocating it */
    for (uint64_t d = 0; d < nd; d++)
        if (!held[d] && content_len(off, d) >= (uint64_t)c->ngram)
            r->train_windows += content_len(off, d) - (uint64_t)c->ngram + 1;
    uint64_t slots = ax_hash_slots(r->train_windows);
    r->table_bytes = slots * sizeof(uint64_t);
    if (c->max_memory && r->table_bytes > c->max_memory) {
        st = ax_errorf(AX_ERR_ARG,
                       "the %d-gram set of %" PRIu64 " training windows needs %.2f GiB, over "
                       "--max-memory %.2f GiB; raise --max-memory or split a smaller dataset",
                       c->ngram, r->train_windows, (double)r->table_bytes / (1 << 30),
                       (double)c->max_memory / (1 << 30));
        goto fail;
    }
    if (!ax_keyset_init(&set, slots)) {
        st = ax_errorf(AX_ERR_NOMEM, "out of memory for the %d-gram set (%.2f GiB)", c->ngram,
                       (double)r->table_bytes / (1 << 30));
        goto fail;
    }
    AX_CHECK_GOTO(ax_axd_writer_create(out_train, ax_axd_vocab_size(ds), &wt), fail);
    AX_CHECK_GOTO(ax_axd_writer_create(out_holdout, ax_axd_vocab_size(ds), &wh), fail);
    ax_axd_writer_set_tokenizer(wt, ax_axd_tokenizer_checksum(ds));
    ax_axd_writer_set_tokenizer(wh, ax_axd_tokenizer_checksum(ds));
    AX_CHECK_GOTO(ax_axd_writer_set_eot(wt, ax_axd_eot(ds)), fail); /* an imported set's own */
    AX_CHECK_GOTO(ax_axd_writer_set_eot(wh, ax_axd_eot(ds)), fail);
    /* pass 1: the training documents, written and hashed */
    for (uint64_t d = 0; d < nd; d++) {
        if (held[d]) continue;
        AX_CHECK_GOTO(read_doc(ds, d, &buf, &cap), fail);
        uint64_t n = content_len(off, d);
        for (uint64_t i = 0; i + (uint64_t)c->ngram <= n; i++)
            ax_keyset_add(&set, key_of(buf + i, c->ngram));
        AX_CHECK_GOTO(ax_axd_writer_add_doc(wt, buf, (size_t)(off[d + 1] - off[d])), fail);
        r->train_docs++;
        r->train_tokens += off[d + 1] - off[d];
    }
    /* pass 2: the drawn documents, kept unless a window is in the set */
    for (uint64_t d = 0; d < nd; d++) {
        if (!held[d]) continue;
        AX_CHECK_GOTO(read_doc(ds, d, &buf, &cap), fail);
        uint64_t n = content_len(off, d), hit = UINT64_MAX;
        for (uint64_t i = 0; i + (uint64_t)c->ngram <= n && hit == UINT64_MAX; i++)
            if (ax_keyset_has(&set, key_of(buf + i, c->ngram))) hit = i;
        if (hit != UINT64_MAX) {
            if (r->n_listed < AX_SPLIT_LISTED) {
                r->listed_doc[r->n_listed] = d;
                r->listed_pos[r->n_listed++] = hit;
            }
            r->dropped_docs++;
            r->dropped_tokens += off[d + 1] - off[d];
            continue;
        }
        AX_CHECK_GOTO(ax_axd_writer_add_doc(wh, buf, (size_t)(off[d + 1] - off[d])), fail);
        r->holdout_docs++;
        r->holdout_tokens += off[d + 1] - off[d];
    }
    if (r->holdout_docs == 0) {
        st = ax_errorf(AX_ERR_ARG,
                       "every one of the %" PRIu64 " held-out documents shares a %d-token "
                       "run with the training set; raise --ngram or --holdout",
                       r->drawn_docs, c->ngram);
        goto fail;
    }
    /* the held-out set first: a failure between the two closes leaves no training set that
     * could be mistaken for a complete split */
    st = ax_axd_writer_close(wh);
    wh = NULL;
    if (st != AX_OK) goto fail;
    st = ax_axd_writer_close(wt);
    wt = NULL;
    if (st != AX_OK) {
        remove(out_holdout);
        goto fail;
    }
    goto out;
fail:
    ax_axd_writer_abort(wt);
    ax_axd_writer_abort(wh);
out:
    free(set.slot);
    free(buf);
    free(perm);
    free(held);
    ax_axd_free(ds);
    return st;
}

void ax_split_result_json(const ax_split_result *r, const ax_split_config *c, ax_jw *w) {
    ax_jw_obj_begin(w);
    ax_jw_key(w, "holdout_fraction"), ax_jw_num(w, c->holdout);
    ax_jw_key(w, "seed"), ax_jw_uint(w, c->seed);
    ax_jw_key(w, "ngram"), ax_jw_int(w, c->ngram);
    ax_jw_key(w, "input");
    ax_jw_obj_begin(w);
    ax_jw_key(w, "docs"), ax_jw_uint(w, r->docs);
    ax_jw_key(w, "tokens"), ax_jw_uint(w, r->tokens);
    ax_jw_obj_end(w);
    ax_jw_key(w, "train");
    ax_jw_obj_begin(w);
    ax_jw_key(w, "docs"), ax_jw_uint(w, r->train_docs);
    ax_jw_key(w, "tokens"), ax_jw_uint(w, r->train_tokens);
    ax_jw_obj_end(w);
    ax_jw_key(w, "holdout");
    ax_jw_obj_begin(w);
    ax_jw_key(w, "drawn_docs"), ax_jw_uint(w, r->drawn_docs);
    ax_jw_key(w, "docs"), ax_jw_uint(w, r->holdout_docs);
    ax_jw_key(w, "tokens"), ax_jw_uint(w, r->holdout_tokens);
    ax_jw_obj_end(w);
    ax_jw_key(w, "dropped");
    ax_jw_obj_begin(w);
    ax_jw_key(w, "docs"), ax_jw_uint(w, r->dropped_docs);
    ax_jw_key(w, "tokens"), ax_jw_uint(w, r->dropped_tokens);
    char why[160];
    snprintf(why, sizeof why,
             "held-out document shares a run of >= %d tokens with the training set", c->ngram);
    ax_jw_key(w, "reason"), ax_jw_str(w, why);
    ax_jw_key(w, "first");
    ax_jw_arr_begin(w);
    for (int i = 0; i < r->n_listed; i++) {
        ax_jw_obj_begin(w);
        ax_jw_key(w, "doc"), ax_jw_uint(w, r->listed_doc[i]);
        ax_jw_key(w, "token_pos"), ax_jw_uint(w, r->listed_pos[i]);
        ax_jw_obj_end(w);
    }
    ax_jw_arr_end(w);
    ax_jw_obj_end(w);
    ax_jw_key(w, "ngram_set");
    ax_jw_obj_begin(w);
    ax_jw_key(w, "windows"), ax_jw_uint(w, r->train_windows);
    ax_jw_key(w, "bytes"), ax_jw_uint(w, r->table_bytes);
    ax_jw_obj_end(w);
    ax_jw_obj_end(w);
}
