/* The study's inputs, through the library calls the commands make: the corpus' documents, the
 * tokenizer, the member / held-out split, the canaries and the training set's index. */
#include "data/axd.h"
#include "data/canary.h"
#include "data/data_run.h"
#include "data/split.h"
#include "index/index.h"
#include "lib/core/fsutil.h"
#include "lib/core/json.h"
#include "lib/core/log.h"
#include "lib/core/stop.h"
#include "study/study_run.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* one document's text as a JSONL line, cut to chars bytes */
static ax_status write_doc(FILE *out, const char *text, size_t chars, const char *path) {
    ax_jw w;
    ax_jw_init(&w);
    ax_jw_obj_begin(&w);
    ax_jw_key(&w, "text");
    size_t full = strlen(text), len = full < chars ? full : chars;
    while (len > 0 && len < full && ((unsigned char)text[len] & 0xC0) == 0x80)
        len--; /* never cut inside a UTF-8 character */
    ax_jw_strn(&w, text, len);
    ax_jw_obj_end(&w);
    ax_status st = ax_jw_text(&w) && fprintf(out, "%s\n", ax_jw_text(&w)) >= 0
                       ? AX_OK
                       : ax_errorf(AX_ERR_IO, "cannot write %s", path);
    ax_jw_free(&w);
    return st;
}

ax_status ax_study_subset(const char *corpus, long first, long n, size_t chars, const char *path) {
    size_t clen = strlen(corpus);
    int jsonl = clen > 6 && !strcmp(corpus + clen - 6, ".jsonl");
    FILE *in = NULL, *out = NULL;
    AX_CHECK(ax_fopen_regular(corpus, "check --corpus", &in));
    out = ax_fopen_private(path); /* training text: 0600 */
    char *line = NULL;
    size_t cap = 0;
    long i = 0, written = 0;
    ssize_t got;
    ax_status st = out ? AX_OK : ax_errorf(AX_ERR_IO, "cannot write %s", path);
    while (st == AX_OK && written < n && (got = getline(&line, &cap, in)) > 0) {
        while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r')) line[--got] = 0;
        if (!jsonl && !got) continue; /* plain text: a document a non-empty line */
        if (i++ < first) continue;
        if (!jsonl) {
            st = write_doc(out, line, chars, path);
        } else {
            ax_json *j = NULL;
            const char *text;
            st = ax_json_parse(line, (size_t)got, corpus, &j);
            if (st == AX_OK) st = ax_json_get_str(j, "text", corpus, &text);
            if (st == AX_OK) st = write_doc(out, text, chars, path);
            ax_json_free(j);
        }
        written += st == AX_OK;
    }
    if (st == AX_OK && written < n)
        st = ax_errorf(AX_ERR_ARG, "--corpus %s has fewer than %ld documents (--docs asks for %ld)",
                       corpus, first + n, n);
    free(line);
    fclose(in);
    if (out && fclose(out) && st == AX_OK) st = ax_errorf(AX_ERR_IO, "cannot write %s", path);
    return st;
}

ax_status ax_study_tokenizer(const char *corpus, int64_t vocab, const char *tok) {
    const char *inputs[1] = {corpus};
    size_t n = strlen(corpus);
    int jsonl = n > 6 && !strcmp(corpus + n - 6, ".jsonl");
    ax_data_tokenizer_result r;
    AX_CHECK(ax_data_tokenizer_train(inputs, 1, !jsonl, (uint64_t)vocab, 0, tok, &r));
    AX_INFO("wrote %s: vocab %d, %d merges, checksum %016" PRIx64 ", %.2f s", tok, r.vocab,
            r.merges, r.checksum, r.seconds);
    return AX_OK;
}

ax_status ax_study_encode(const char *tok, const char *jsonl, const char *axd) {
    const char *inputs[1] = {jsonl};
    ax_data_encode_result r;
    AX_CHECK(ax_data_encode(tok, inputs, 1, 0, 0, axd, &r));
    AX_INFO("wrote %s", axd);
    return AX_OK;
}

ax_status ax_study_split(const char *pool, int64_t ngram, const char *members, const char *heldout,
                         const char *split_json) {
    const ax_split_config c = {.holdout = 0.5, .seed = 1, .ngram = (int)ngram, .max_memory = 0};
    ax_split_result r;
    AX_CHECK(ax_data_split(pool, members, heldout, &c, &r));
    AX_INFO("wrote %s (%" PRIu64 " documents) and %s (%" PRIu64 " documents; %" PRIu64
            " dropped: they share a run of >= %d tokens with the members)",
            members, r.train_docs, heldout, r.holdout_docs, r.dropped_docs, (int)ngram);
    char text[256];
    snprintf(text, sizeof text,
             "{\"members\":%" PRIu64 ",\"nonmembers\":%" PRIu64 ",\"dropped\":%" PRIu64
             ",\"ngram\":%d}",
             r.train_docs, r.holdout_docs, r.dropped_docs, (int)ngram);
    return ax_write_text_atomic(split_json, text, 0);
}

ax_status ax_study_canaries(const ax_study_config *c, const char *members, const char *tok,
                            const char *out, const char *secrets) {
    int repeats[AX_STUDY_MAX_REPEATS], n_repeats = 0;
    if (ax_study_parse_repeats(c->canary_repeats, repeats, &n_repeats))
        return ax_errorf(AX_ERR_ARG, "--canary-repeats '%s' is not a list of counts",
                         c->canary_repeats);
    ax_canary_config cc = {.input = members,
                           .tokenizer = tok,
                           .format = c->canary_format,
                           .out = out,
                           .secrets = secrets,
                           .repeats = repeats,
                           .n_repeats = n_repeats,
                           .per_repeat = (int)c->per_repeat,
                           .references = 1000, /* the rest of a small space: exact exposure */
                           .seed = 1,
                           .within = (long)c->seq_len}; /* where --packing doc trains */
    ax_canary_result r;
    if (ax_data_canaries(&cc, &r) == AX_ERR_ARG) {
        AX_WARN("%s; planting anywhere in the members instead (memscan exposure marks the copies "
                "training never reads)",
                ax_error_msg());
        ax_error_clear();
        cc.within = 0;
        AX_CHECK(ax_data_canaries(&cc, &r));
    }
    AX_INFO("wrote %s: %ld canaries, %" PRIu64 " insertions; %s (mode 0600): %ld references%s", out,
            r.canaries, r.insertions, secrets, r.references,
            r.references_complete ? " (all the rest of the space)" : "");
    return AX_OK;
}

ax_status ax_study_index(const char *axd, const char *index) {
    ax_memscan_build_opts o;
    ax_memscan_build_opts_default(&o);
    o.n = 16;
    ax_stop_catch();
    o.stop = ax_stop_flag();
    o.progress = 1;
    ax_axd_t *ds = NULL;
    ax_memscan_index_t *idx = NULL;
    ax_status st = ax_axd_open(axd, 1, &ds);
    if (st == AX_OK) st = ax_memscan_index_build(ds, &o, &idx);
    if (st == AX_OK) st = ax_memscan_index_save(idx, index, o.stop);
    if (st == AX_OK) AX_INFO("wrote %s and %s.json", index, index);
    ax_memscan_index_free(idx);
    ax_axd_free(ds);
    return st;
}
