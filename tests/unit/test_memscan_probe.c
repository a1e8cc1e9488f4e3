/* `memscan probe` against a brute-force recomputation: for prefix/suffix lengths P < S, P > S
 * and P == S, with and without the end-of-text that leads `--packing doc` documents, and with
 * prefixes at document starts and at random offsets, every sample's greedy continuation is
 * recomputed with the model's full forward over prompt + generated tokens (no KV cache), and
 * its truth, exact match, token accuracy, matched prefix and RougeL are recomputed from the
 * dataset. Run under ASan, this also checks every probe buffer for every P/S combination. */
#include <criterion/criterion.h>
#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/axd.h"
#include "data/tokenizer.h"
#include "lib/core/log.h"
#include "lib/model/model.h"
#include "lib/core/rng.h"
#include "memscan/probe.h"
#include "tests/unit/test_suite_files.h"

TestSuite(memscan_probe, .init = ts_quiet, .fini = ts_cleanup, .timeout = 120);

#define VOCAB 300 /* the model's and the dataset's */

static ax_model_t *tiny_model(int T) {
    ax_model_config c = {.n_layers = 2,
                         .dim = 16,
                         .n_heads = 2,
                         .ffn = 24,
                         .vocab = VOCAB,
                         .tie_embeddings = 0,
                         .rope_theta = 10000.0f,
                         .norm_eps = 1e-5f};
    ax_model_t *m = NULL;
    cr_assert_eq(ax_model_create(&c, 1, T, &m), AX_OK, "%s", ax_error_msg());
    ax_model_init(m, 11);
    /* larger weights than the init's: logits far from uniform, so greedy choices are clear */
    int64_t n = ax_model_n_local(m);
    float *p = malloc(sizeof *p * (size_t)n);
    cr_assert_eq(ax_model_read_params(m, p, 0, n), AX_OK);
    for (int64_t i = 0; i < n; i++) p[i] *= 4.0f;
    cr_assert_eq(ax_model_write_params(m, p, 0, n), AX_OK);
    free(p);
    return m;
}

/* Greedy next token after seq[0..len) by a full forward (positions 0..len-1; the rest of the
 * allocated T is padding the causal mask keeps out). *gap: best minus second-best logit. */
static int32_t full_argmax(ax_model_t *m, int T, const int32_t *seq, int len, float *gap) {
    int32_t *in = calloc((size_t)T, sizeof *in), *tg = calloc((size_t)T, sizeof *tg);
    uint8_t *mask = calloc((size_t)T, 1);
    memcpy(in, seq, sizeof *in * (size_t)len);
    ax_model_forward(m, in, tg, mask, 1, 1.0f, 0);
    int v0, valid, Vl;
    ax_model_vocab_slice(m, &v0, &valid, &Vl);
    cr_assert_eq(v0, 0);
    float *all = malloc(sizeof *all * (size_t)T * (size_t)Vl); /* [1, T, Vl] */
    cr_assert_eq(ax_model_read_logits(m, all), AX_OK);
    const float *lg = all + (size_t)(len - 1) * Vl;
    int best = 0;
    float second = -INFINITY;
    for (int v = 1; v < valid; v++)
        if (lg[v] > lg[best]) best = v;
    for (int v = 0; v < valid; v++)
        if (v != best && lg[v] > second) second = lg[v];
    *gap = lg[best] - second;
    free(in), free(tg), free(mask), free(all);
    return best;
}

/* greedy continuation of prompt[0..np) for S tokens by full forwards; out[S] */
static void full_greedy(ax_model_t *m, int T, const int32_t *prompt, int np, int S, int32_t *out) {
    int32_t *seq = malloc(sizeof *seq * (size_t)(np + S));
    memcpy(seq, prompt, sizeof *seq * (size_t)np);
    for (int k = 0; k < S; k++) {
        float gap;
        seq[np + k] = full_argmax(m, T, seq, np + k, &gap);
    }
    memcpy(out, seq + np, sizeof *out * (size_t)S);
    free(seq);
}

/* reference RougeL: LCS by the full table, then F1 */
static double lcs_f1(const int32_t *a, const int32_t *b, int S) {
    int *t = calloc((size_t)(S + 1) * (S + 1), sizeof *t);
    for (int i = 1; i <= S; i++)
        for (int j = 1; j <= S; j++) {
            int x = t[(i - 1) * (S + 1) + j], y = t[i * (S + 1) + j - 1];
            t[i * (S + 1) + j] =
                a[i - 1] == b[j - 1] ? t[(i - 1) * (S + 1) + j - 1] + 1 : (x > y ? x : y);
        }
    double l = t[S * (S + 1) + S];
    free(t);
    return l == 0 ? 0.0 : l / S; /* P = R = l/S, so F1 = l/S */
}

/* 14 documents of 30..45 tokens (random bytes). Documents 0-5 are what the model itself continues
 * greedily from their first P tokens (led by end-of-text when `lead`): a probe at their start is an
 * exact match. Document 3 then has one token of its continuation changed (a partial match). */
static void make_dataset(const char *path, ax_model_t *m, int T, int P, int S, int lead) {
    ax_axd_writer_t *w = NULL;
    cr_assert_eq(ax_axd_writer_create(path, VOCAB, &w), AX_OK, "%s", ax_error_msg());
    for (int d = 0; d < 14; d++) {
        int len = 30 + (int)ax_rng_below(5, 0, (uint64_t)d, 16);
        int32_t doc[64], prompt[64];
        for (int i = 0; i < len; i++)
            doc[i] = (int32_t)ax_rng_below(5, 1 + (uint64_t)d, (uint64_t)i, 256);
        if (d < 6) {
            prompt[0] = AX_TOK_EOT;
            memcpy(prompt + lead, doc, sizeof *doc * (size_t)P);
            int32_t cont[64];
            full_greedy(m, T, prompt, lead + P, S, cont);
            memcpy(doc + P, cont, sizeof *doc * (size_t)S);
            if (d == 3) doc[P + S / 2] = (doc[P + S / 2] + 1) % 256;
        }
        cr_assert_eq(ax_axd_writer_add_doc(w, doc, (size_t)len), AX_OK);
    }
    cr_assert_eq(ax_axd_writer_close(w), AX_OK, "%s", ax_error_msg());
}

static void check_probe(int P, int S, int lead, int random_offset) {
    int T = P + S; /* the least the probe asks for (the prompt with its end-of-text + S - 1) */
    ax_model_t *m = tiny_model(T);
    char path[128];
    snprintf(path, sizeof path, "/tmp/axmem_test_%d_probe_%d_%d_%d.axd", (int)getpid(), P, S, lead);
    make_dataset(path, m, T, P, S, lead);
    ax_axd_t *ds = NULL;
    cr_assert_eq(ax_axd_open(path, 1, &ds), AX_OK, "%s", ax_error_msg());
    ax_probe_config c = {.prefix = P,
                         .suffix = S,
                         .samples = 14, /* every document; 4 batches, the last one short */
                         .batch = 4,
                         .seed = 3,
                         .random_offset = random_offset,
                         .lead_eot = lead};
    ax_probe_result r;
    cr_assert_eq(ax_probe_run(m, ds, &c, &r), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(r.n, 14);
    cr_assert_eq(r.lead_eot, lead);
    const uint64_t *off = ax_axd_doc_offsets(ds);
    int exact = 0, partial = 0, at_start = 0, led = 0;
    int32_t prompt[64], gen[64], truth[64];
    for (int i = 0; i < r.n; i++) {
        const ax_probe_sample *s = &r.s[i];
        uint64_t dlen = off[s->doc + 1] - off[s->doc] - 1; /* without its end-of-text */
        cr_assert(s->offset + (uint64_t)(P + S) <= dlen, "sample %d leaves its document", i);
        if (!random_offset) cr_assert_eq(s->offset, 0);
        at_start += s->offset == 0;
        /* the prompt training saw: end-of-text first only where the document starts */
        int L = lead && s->offset == 0;
        led += L;
        prompt[0] = AX_TOK_EOT;
        ax_axd_tokens(ds, off[s->doc] + s->offset, (uint64_t)P, prompt + L);
        ax_axd_tokens(ds, off[s->doc] + s->offset + (uint64_t)P, (uint64_t)S, truth);
        /* greedy by full forwards; where the probe's KV-cached choice is a near tie with the
         * full forward's (float rounding of a different summation order), follow the probe */
        int32_t seq[128];
        memcpy(seq, prompt, sizeof *seq * (size_t)(L + P));
        for (int k = 0; k < S; k++) {
            float gap;
            int32_t t = full_argmax(m, T, seq, L + P + k, &gap);
            if (t != s->generated[k]) {
                cr_assert(gap < 1e-4f, "P=%d S=%d lead=%d sample %d token %d: probe %d, full %d", P,
                          S, lead, i, k, s->generated[k], t);
                t = s->generated[k];
            }
            gen[k] = seq[L + P + k] = t;
        }
        int match = 0, pre = 0;
        while (pre < S && gen[pre] == truth[pre]) pre++;
        for (int k = 0; k < S; k++) match += gen[k] == truth[k];
        cr_assert_arr_eq(s->truth, truth, sizeof *truth * (size_t)S, "sample %d truth", i);
        cr_assert_arr_eq(s->generated, gen, sizeof *gen * (size_t)S, "sample %d generated", i);
        cr_assert_eq(s->matched_prefix, pre, "sample %d", i);
        cr_assert_eq(s->exact, pre == S, "sample %d", i);
        cr_assert_float_eq(s->token_accuracy, (double)match / S, 1e-12, "sample %d", i);
        cr_assert_float_eq(s->rouge_l, lcs_f1(gen, truth, S), 1e-12, "sample %d", i);
        exact += s->exact;
        partial += !s->exact && pre > 0;
    }
    /* at document starts the planted documents reproduce: the metrics are not all zero */
    if (!random_offset) {
        cr_assert(exact >= 3, "P=%d S=%d lead=%d: only %d exact", P, S, lead, exact);
        cr_assert(partial >= 1, "P=%d S=%d lead=%d: no partial match", P, S, lead);
        cr_assert_eq(led, lead ? r.n : 0);
    } else {
        cr_assert(at_start < r.n, "random offsets all 0");
    }
    ax_probe_result_free(&r);
    ax_axd_free(ds);
    ax_model_free(m);
}

Test(memscan_probe, prefix_shorter_than_suffix) {
    check_probe(6, 10, 0, 0);
    check_probe(6, 10, 1, 0);
    check_probe(6, 10, 1, 1);
}

Test(memscan_probe, prefix_longer_than_suffix) {
    check_probe(12, 4, 0, 0);
    check_probe(12, 4, 1, 0);
    check_probe(12, 4, 0, 1);
}

Test(memscan_probe, prefix_equals_suffix) {
    check_probe(8, 8, 0, 0);
    check_probe(8, 8, 1, 1);
}

Test(memscan_probe, one_token_prompt) {
    check_probe(1, 5, 0, 0);
    check_probe(1, 5, 1, 0);
}
