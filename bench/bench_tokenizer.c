/* Tokenizer throughput on the bundled corpus, each result next to a ceiling measured in the
 * same run over the same bytes (memcpy bandwidth, XXH3 hash rate).
 * usage: bench_tokenizer [corpus.jsonl|txt] [vocab]   (default data/corpus/kjv.jsonl 4096) */
#include "data/input.h"
#include "data/pretok.h"
#include "data/tokenizer.h"
#include "lib/core/log.h"
#include "lib/core/timer.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

static volatile uint64_t sink;

/* best of `reps` timings of the statements (variadic: they may contain commas) */
#define BEST(reps, secs, ...)                                                                      \
    do {                                                                                           \
        secs = 1e30;                                                                               \
        for (int r_ = 0; r_ < (reps); r_++) {                                                      \
            double t0_ = ax_now();                                                                 \
            __VA_ARGS__;                                                                           \
            double dt_ = ax_now() - t0_;                                                           \
            if (dt_ < secs) secs = dt_;                                                            \
        }                                                                                          \
    } while (0)

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "data/corpus/kjv.jsonl";
    int vocab = argc > 2 ? atoi(argv[2]) : 4096;
    ax_log_set_level(AX_LOG_WARN);

    /* documents, concatenated into one buffer */
    ax_input_t *in;
    if (ax_input_open(&path, 1, 0, &in) != AX_OK) {
        fprintf(stderr, "bench_tokenizer: %s (run from the repository root)\n", ax_error_msg());
        return 1;
    }
    size_t cap = 1 << 24, len = 0, nd = 0, dcap = 1 << 12;
    uint8_t *text = malloc(cap);
    size_t *doff = malloc(dcap * sizeof *doff);
    doff[0] = 0;
    for (;;) {
        const uint8_t *p;
        size_t n;
        int end, eof;
        if (ax_input_next(in, &p, &n, &end, &eof) != AX_OK) {
            fprintf(stderr, "bench_tokenizer: %s\n", ax_error_msg());
            return 1;
        }
        if (eof) break;
        while (len + n > cap) text = realloc(text, cap *= 2);
        memcpy(text + len, p, n);
        len += n;
        if (end) {
            if (nd + 2 > dcap) doff = realloc(doff, (dcap *= 2) * sizeof *doff);
            doff[++nd] = len;
        }
    }
    ax_input_free(in);
    const uint8_t **segs = malloc(nd * sizeof *segs);
    size_t *lens = malloc(nd * sizeof *lens), *nouts = malloc(nd * sizeof *nouts);
    int32_t **outs = malloc(nd * sizeof *outs);
    for (size_t i = 0; i < nd; i++) {
        segs[i] = text + doff[i];
        lens[i] = doff[i + 1] - doff[i];
    }
    double mb = (double)len / 1e6;
    int threads = omp_get_max_threads();
    printf("corpus: %s, %.2f MB of text, %zu docs, %d threads\n", path, mb, nd, threads);

    /* ceilings */
    double t_copy, t_hash, t_pre;
    uint8_t *dst = malloc(len);
    BEST(10, t_copy, memcpy(dst, text, len); sink += dst[len / 2]);
    BEST(10, t_hash, for (size_t i = 0; i < nd; i++) sink += XXH3_64bits(segs[i], lens[i]));
    double c_hash = mb / t_hash;
    printf("ceiling memcpy: %.0f MB/s\n", mb / t_copy);
    printf("ceiling xxh3: %.0f MB/s\n", c_hash);
    BEST(
        5, t_pre, for (size_t d = 0; d < nd; d++) {
            for (size_t i = 0; i < lens[d];) i = ax_pretok_next(segs[d], lens[d], i), sink++;
        });
    printf("pretokenize: %.0f MB/s = %.3f of xxh3\n", mb / t_pre, (mb / t_pre) / c_hash);

    /* training */
    ax_tokenizer_t *tok = NULL;
    double t_count = 1e30, t_merge = 1e30;
    for (int r = 0; r < 3; r++) {
        ax_bpe_trainer_t *tr;
        ax_tokenizer_t *t;
        double t0 = ax_now();
        ax_bpe_trainer_create(&tr);
        for (size_t i = 0; i < nd; i++) ax_bpe_trainer_add(tr, segs[i], lens[i]);
        double t1 = ax_now();
        if (ax_bpe_trainer_train(tr, vocab, NULL, &t) != AX_OK) {
            fprintf(stderr, "bench_tokenizer: %s\n", ax_error_msg());
            return 1;
        }
        double t2 = ax_now();
        ax_bpe_trainer_free(tr);
        if (t1 - t0 < t_count) t_count = t1 - t0;
        if (t2 - t1 < t_merge) t_merge = t2 - t1;
        ax_tokenizer_free(tok);
        tok = t;
    }
    printf("train vocab=%d: %.3f s (count %.3f s + merges %.3f s); xxh3 over the same bytes "
           "%.4f s; ratio %.0fx\n",
           ax_tokenizer_vocab_size(tok), t_count + t_merge, t_count, t_merge, t_hash,
           (t_count + t_merge) / t_hash);

    /* encoding: one thread cold (fresh caches) and warm, then all threads */
    ax_tok_encoder_t *e;
    size_t ntok = 0;
    double t_cold, t_warm, t_par;
    ax_tok_encoder_create(tok, 1, &e);
    double t0 = ax_now();
    ax_tok_encoder_encode_many(e, nd, segs, lens, outs, nouts);
    t_cold = ax_now() - t0;
    for (size_t i = 0; i < nd; i++) ntok += nouts[i], free(outs[i]);
    BEST(5, t_warm, ax_tok_encoder_encode_many(e, nd, segs, lens, outs, nouts);
         for (size_t i = 0; i < nd; i++) free(outs[i]));
    ax_tok_encoder_free(e);
    printf("encode 1 thread cold: %.1f MB/s = %.3f of xxh3\n", mb / t_cold, (mb / t_cold) / c_hash);
    printf("encode 1 thread warm: %.1f MB/s = %.3f of xxh3\n", mb / t_warm, (mb / t_warm) / c_hash);
    ax_tok_encoder_create(tok, threads, &e);
    BEST(5, t_par, ax_tok_encoder_encode_many(e, nd, segs, lens, outs, nouts);
         for (size_t i = 0; i < nd; i++) free(outs[i]));
    ax_tok_encoder_free(e);
    printf("encode %d threads: %.1f MB/s, %.1f MB/s per core = %.3f of xxh3 per core\n", threads,
           mb / t_par, mb / t_par / threads, (mb / t_par / threads) / c_hash);
    printf("tokens: %zu (%.2f bytes/token)\n", ntok, (double)len / (double)ntok);

    ax_tokenizer_free(tok);
    free(dst);
    free(text);
    free(doff);
    free(segs);
    free(lens);
    free(nouts);
    free(outs);
    return sink == 42 ? 2 : 0;
}
