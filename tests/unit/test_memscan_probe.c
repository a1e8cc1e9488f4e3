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
#include "lib/core/fsutil.h"
#include "lib/core/json.h"
#include "lib/core/log.h"
#include "lib/model/model.h"
#include "lib/core/rng.h"
#include "memscan/generate_run.h"
#include "memscan/index.h"
#include "memscan/probe.h"
#include "memscan/probe_run.h"
#include "train/train.h"
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

/* ---- the command's library calls: ax_ms_probe_run and ax_ms_generate_run ---- */

/* a number at a path of a JSON file ("metrics/token_accuracy/mean"; "/0", "/1": array items) */
static double json_num(const char *path, const char *keys) {
    char *text = NULL;
    size_t len;
    ax_json *j = NULL;
    cr_assert_eq(ax_read_file(path, &text, &len), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(ax_json_parse(text, len, path, &j), AX_OK, "%s", ax_error_msg());
    const ax_json *v = j;
    char k[128];
    snprintf(k, sizeof k, "%s", keys);
    for (char *save = NULL, *t = strtok_r(k, "/", &save); t; t = strtok_r(NULL, "/", &save))
        v = v && v->type == AX_JSON_ARR ? ((size_t)atoi(t) < v->n ? v->items[atoi(t)] : NULL)
                                        : ax_json_get(v, t);
    cr_assert(v && v->type == AX_JSON_NUM, "%s: no number at %s", path, keys);
    double x = v->num;
    ax_json_free(j);
    free(text);
    return x;
}

/* A run directory with a checkpoint of a tiny model trained 2 steps on 12 documents of 40
 * tokens over an 8-token alphabet (so generations often repeat training tokens). */
static void make_run(const char *data, const char *run) {
    ax_axd_writer_t *w = NULL;
    cr_assert_eq(ax_axd_writer_create(data, VOCAB, &w), AX_OK, "%s", ax_error_msg());
    for (int d = 0; d < 12; d++) {
        int32_t doc[40];
        for (int i = 0; i < 40; i++) doc[i] = (int32_t)ax_rng_below(8, (uint64_t)d, (uint64_t)i, 8);
        cr_assert_eq(ax_axd_writer_add_doc(w, doc, 40), AX_OK);
    }
    cr_assert_eq(ax_axd_writer_close(w), AX_OK, "%s", ax_error_msg());
    ax_train_config c;
    cr_assert_eq(ax_cfg_set_defaults(&ax_train_table, &c), AX_OK);
    snprintf(c.data, sizeof c.data, "%s", data);
    snprintf(c.out, sizeof c.out, "%s", run);
    c.layers = 1, c.dim = 16, c.heads = 2, c.ffn = 24;
    c.seq_len = 32, c.batch = 2, c.steps = 2, c.warmup = 1, c.threads = 1;
    ax_train_result r;
    cr_assert_eq(ax_train_run(&c, NULL, &r), AX_OK, "%s", ax_error_msg());
}

Test(memscan_probe, library_calls_return_what_they_write) {
    char data[128], run[128], scan[160], idx[128], gscan[160];
    int pid = (int)getpid();
    snprintf(data, sizeof data, "/tmp/axmem_test_%d_lib.axd", pid);
    snprintf(run, sizeof run, "/tmp/axmem_test_%d_librun", pid);
    snprintf(scan, sizeof scan, "/tmp/axmem_test_%d_p.json", pid);
    snprintf(idx, sizeof idx, "/tmp/axmem_test_%d_lib.idx", pid);
    snprintf(gscan, sizeof gscan, "/tmp/axmem_test_%d_g.json", pid);
    make_run(data, run);

    ax_ms_probe_opts po;
    ax_ms_probe_summary ps;
    cr_assert_eq(ax_cfg_set_defaults(&ax_ms_probe_table, &po), AX_OK);
    cr_assert_eq(ax_ms_probe_run(&po, &ps), AX_ERR_ARG); /* no --ckpt, no --data */
    cr_assert(strstr(ax_error_msg(), "--ckpt and --data are required"), "%s", ax_error_msg());
    ax_error_clear();
    snprintf(po.ckpt, sizeof po.ckpt, "%s", run);
    snprintf(po.data, sizeof po.data, "%s", data);
    snprintf(po.out, sizeof po.out, "%s", scan);
    snprintf(po.offset, sizeof po.offset, "middle"); /* the table would refuse it; so does run */
    cr_assert_eq(ax_ms_probe_run(&po, &ps), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "use start, random or deep"), "%s", ax_error_msg());
    ax_error_clear();
    snprintf(po.offset, sizeof po.offset, "start");
    po.samples = 6, po.prefix = 8, po.suffix = 8, po.batch = 4;
    cr_assert_eq(ax_ms_probe_run(&po, &ps), AX_OK, "%s", ax_error_msg());
    cr_assert(ps.written);
    cr_assert_eq(ps.samples, 6);
    cr_assert_str_eq(ps.scan, scan);
    cr_assert(ax_path_exists(ps.samples_path), "%s", ps.samples_path);
    /* the summary holds the numbers of the file, exactly (the writer's numbers read back) */
    cr_assert_eq(ps.exact_match.mean, json_num(scan, "metrics/exact_match_rate/mean"));
    cr_assert_eq(ps.exact_match.lo, json_num(scan, "metrics/exact_match_rate/ci95/0"));
    cr_assert_eq(ps.exact_match.hi, json_num(scan, "metrics/exact_match_rate/ci95/1"));
    cr_assert_eq(ps.token_accuracy.mean, json_num(scan, "metrics/token_accuracy/mean"));
    cr_assert_eq(ps.token_accuracy.hi, json_num(scan, "metrics/token_accuracy/ci95/1"));
    cr_assert_eq(ps.rouge_l.lo, json_num(scan, "metrics/rouge_l/ci95/0"));
    cr_assert_eq(ps.matched_prefix_mean, json_num(scan, "metrics/matched_prefix_mean"));
    cr_assert(ps.exact_match.lo <= ps.exact_match.mean && ps.exact_match.mean <= ps.exact_match.hi);
    cr_assert(ps.exact_match.hi > 0.3, "6 samples leave a wide interval: %g", ps.exact_match.hi);

    ax_axd_t *ds = NULL;
    ax_memscan_index_t *ix = NULL;
    ax_memscan_build_opts bo;
    ax_memscan_build_opts_default(&bo);
    bo.n = 1; /* one-token windows: generations hold spans, so the numbers are not all zero */
    cr_assert_eq(ax_axd_open(data, 1, &ds), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(ax_memscan_index_build(ds, &bo, &ix), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(ax_memscan_index_save(ix, idx, NULL), AX_OK, "%s", ax_error_msg());
    ax_memscan_index_free(ix);
    ax_axd_free(ds);
    ax_ms_generate_opts go;
    ax_ms_generate_summary gs;
    cr_assert_eq(ax_cfg_set_defaults(&ax_ms_generate_table, &go), AX_OK);
    snprintf(go.ckpt, sizeof go.ckpt, "%s", run);
    snprintf(go.index, sizeof go.index, "%s", idx);
    snprintf(go.out, sizeof go.out, "%s", gscan);
    go.samples = 6, go.length = 16, go.batch = 4;
    cr_assert_eq(ax_ms_generate_run(&go, &gs), AX_OK, "%s", ax_error_msg());
    cr_assert(gs.written);
    cr_assert_eq(gs.samples, 6);
    cr_assert_eq(gs.length, 16);
    cr_assert_eq(gs.n, 1);
    cr_assert(ax_path_exists(gs.samples_path), "%s", gs.samples_path);
    cr_assert_eq((double)gs.with_span / 6, json_num(gscan, "metrics/frac_with_verbatim_span"));
    cr_assert_eq(gs.mean_longest_span, json_num(gscan, "metrics/mean_longest_span"));
    cr_assert_eq((double)gs.max_longest_span, json_num(gscan, "metrics/max_longest_span"));
    static const char *hk[4] = {"none", "n..2n-1", "2n..4n-1", ">=4n"};
    long total = 0;
    for (int k = 0; k < 4; k++) {
        char key[64];
        snprintf(key, sizeof key, "tables/longest_span_hist/%s", hk[k]);
        cr_assert_eq((double)gs.longest_span_hist[k], json_num(gscan, key), "%s", key);
        total += gs.longest_span_hist[k];
    }
    cr_assert_eq(total, 6);
    cr_assert_eq(gs.with_span, 6 - gs.longest_span_hist[0]);
    cr_assert(gs.with_span > 0, "no generation repeats a training token");
    ax_rm_rf(run);
}
