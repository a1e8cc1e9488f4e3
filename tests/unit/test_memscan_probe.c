/* `memscan probe` against a brute-force recomputation: for prefix/suffix lengths P < S, P > S
 * and P == S, with and without the end-of-text that leads `--packing doc` documents, and with
 * prefixes at document starts and at random offsets, every sample's greedy continuation is
 * recomputed with the model's full forward over prompt + generated tokens (no KV cache), and
 * its truth, exact match, token accuracy, matched prefix and RougeL are recomputed from the
 * dataset. Run under ASan, this also checks every probe buffer for every P/S combination. */
#include <criterion/criterion.h>
#include <glob.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "data/axd.h"
#include "data/loader.h"
#include "data/tokenizer.h"
#include "goldfish/goldfish.h"
#include "lib/core/fsutil.h"
#include "lib/core/json.h"
#include "lib/core/log.h"
#include "lib/model/model.h"
#include "lib/model/sample.h"
#include "lib/core/rng.h"
#include "memscan/generate_run.h"
#include "index/index.h"
#include "memscan/probe.h"
#include "memscan/probe_run.h"
#include "memscan/model_load.h"
#include "memscan/scan_inputs.h"
#include "train/train_run.h"
#include "tests/unit/test_suite_files.h"
#include "tests/unit/test_tiny_model.h"

TestSuite(memscan_probe, .init = ts_quiet, .fini = ts_cleanup, .timeout = 120);

#define VOCAB 300 /* the model's and the dataset's */

static ax_model_t *tiny_model(int T) {
    return ts_tiny_model(1, T, VOCAB, 11);
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
static void make_run_gf(const char *data, const char *run, const char *goldfish);
static void make_run(const char *data, const char *run) {
    make_run_gf(data, run, "none");
}
static void make_run_gf(const char *data, const char *run, const char *goldfish) {
    ax_rm_rf(run); /* a run left by an earlier, failed process with the same pid */
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
    snprintf(c.goldfish, sizeof c.goldfish, "%s", goldfish);
    ax_train_result r;
    cr_assert_eq(ax_train_run(&c, NULL, &r), AX_OK, "%s", ax_error_msg());
}

/* an index of data's n-token windows saved at idx (and, when idx2 is given, as version 2) */
static void save_index(const char *data, int n, const char *idx, const char *idx2) {
    ax_axd_t *ds = NULL;
    ax_memscan_index_t *ix = NULL;
    ax_memscan_build_opts bo;
    ax_memscan_build_opts_default(&bo);
    bo.n = n;
    cr_assert_eq(ax_axd_open(data, 1, &ds), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(ax_memscan_index_build(ds, &bo, &ix), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(ax_memscan_index_save(ix, idx, NULL), AX_OK, "%s", ax_error_msg());
    if (idx2) cr_assert_eq(ax_memscan_index_save_v2(ix, idx2, NULL), AX_OK, "%s", ax_error_msg());
    ax_memscan_index_free(ix);
    ax_axd_free(ds);
}

/* the scans' defaults with their inputs and --out set */
static void probe_opts(ax_ms_probe_opts *po, const char *ckpt, const char *data, const char *out) {
    cr_assert_eq(ax_cfg_set_defaults(&ax_ms_probe_table, po), AX_OK);
    snprintf(po->ckpt, sizeof po->ckpt, "%s", ckpt);
    snprintf(po->data, sizeof po->data, "%s", data);
    snprintf(po->out, sizeof po->out, "%.159s", out);
}
static void generate_opts(ax_ms_generate_opts *go, const char *ckpt, const char *index,
                          const char *out) {
    cr_assert_eq(ax_cfg_set_defaults(&ax_ms_generate_table, go), AX_OK);
    snprintf(go->ckpt, sizeof go->ckpt, "%s", ckpt);
    snprintf(go->index, sizeof go->index, "%s", index);
    snprintf(go->out, sizeof go->out, "%.159s", out);
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

    /* one-token windows: generations hold spans, so the numbers are not all zero */
    save_index(data, 1, idx, NULL);
    ax_ms_generate_opts go;
    ax_ms_generate_summary gs;
    generate_opts(&go, run, idx, gscan);
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

/* a whole file into a malloc'd buffer (NUL-terminated) */
static char *slurp(const char *path, size_t *len) {
    char *text = NULL;
    cr_assert_eq(ax_read_file(path, &text, len), AX_OK, "%s", ax_error_msg());
    return text;
}

/* probe --index and generate (the regurgitation scan) read a version-3 index in place: the
 * open counters show a mapping and no table built or loaded, and their samples are the bytes
 * the same scans write from a version-2 copy of the index (loaded into an in-memory table,
 * how every scan read its index before) */
Test(memscan_probe, scans_read_the_index_in_place) {
    char data[128], run[128], idx3[128], idx2[128], out[4][160], samp[4][200];
    int pid = (int)getpid();
    snprintf(data, sizeof data, "/tmp/axmem_test_%d_inpl.axd", pid);
    snprintf(run, sizeof run, "/tmp/axmem_test_%d_inplrun", pid);
    snprintf(idx3, sizeof idx3, "/tmp/axmem_test_%d_inpl3.idx", pid);
    snprintf(idx2, sizeof idx2, "/tmp/axmem_test_%d_inpl2.idx", pid);
    for (int k = 0; k < 4; k++) {
        snprintf(out[k], sizeof out[k], "/tmp/axmem_test_%d_inpl_%d.json", pid, k);
        snprintf(samp[k], sizeof samp[k], "/tmp/axmem_test_%d_inpl_%d.samples.jsonl", pid, k);
    }
    make_run(data, run);
    /* short windows: probed windows and generations repeat training text */
    save_index(data, 2, idx3, idx2);

    for (int v = 0; v < 2; v++) { /* v = 0: version 3 (in place), 1: version 2 (in memory) */
        const char *index = v == 0 ? idx3 : idx2;
        ax_memscan_open_counts c0, c1, c2;
        ax_memscan_open_counts_get(&c0);
        ax_ms_probe_opts po;
        ax_ms_probe_summary ps;
        cr_assert_eq(ax_cfg_set_defaults(&ax_ms_probe_table, &po), AX_OK);
        snprintf(po.ckpt, sizeof po.ckpt, "%s", run);
        snprintf(po.data, sizeof po.data, "%s", data);
        snprintf(po.index, sizeof po.index, "%s", index);
        snprintf(po.out, sizeof po.out, "%.159s", out[2 * v]);
        snprintf(po.prefix_lengths, sizeof po.prefix_lengths, "4,8");
        po.samples = 6, po.prefix = 8, po.suffix = 8, po.batch = 4;
        cr_assert_eq(ax_ms_probe_run(&po, &ps), AX_OK, "%s", ax_error_msg());
        ax_memscan_open_counts_get(&c1);
        ax_ms_generate_opts go;
        ax_ms_generate_summary gs;
        generate_opts(&go, run, index, out[2 * v + 1]);
        go.samples = 6, go.length = 16, go.batch = 4;
        cr_assert_eq(ax_ms_generate_run(&go, &gs), AX_OK, "%s", ax_error_msg());
        ax_memscan_open_counts_get(&c2);
        cr_assert(gs.with_span > 0, "no generation repeats training text");
        cr_assert_eq(c2.built, c0.built, "a scan built an index");
        if (v == 0) { /* one mapping per prefix length and one for generate, none verified */
            cr_assert_eq(c1.in_place - c0.in_place, 2);
            cr_assert_eq(c2.in_place - c1.in_place, 1);
            cr_assert_eq(c2.verified, c0.verified, "a scan hashed the whole index at open");
            cr_assert_eq(c2.in_memory, c0.in_memory, "a scan loaded the index into memory");
        } else { /* the counter sees what the old path did */
            cr_assert_eq(c2.in_memory - c0.in_memory, 3);
            cr_assert_eq(c2.in_place, c0.in_place);
        }
    }
    /* the same samples, byte for byte; the probes saw duplicates */
    for (int k = 0; k < 2; k++) {
        size_t l3, l2;
        char *a = slurp(samp[k], &l3), *b = slurp(samp[k + 2], &l2);
        cr_assert(l3 > 0 && l3 == l2 && memcmp(a, b, l3) == 0, "%s differs from %s", samp[k],
                  samp[k + 2]);
        if (k == 0) cr_assert(strstr(a, "\"duplicates\":"), "probe samples carry no duplicates");
        free(a);
        free(b);
    }
    for (int k = 0; k < 4; k++) unlink(out[k]), unlink(samp[k]);
    unlink(idx3), unlink(idx2), unlink(data);
    ax_rm_rf(run);
}

/* ---- sampled extraction (lib/model/sample.h; ax_probe_config.draws) ---- */

/* The distribution ax_sample_rows should draw from, computed directly: softmax(x / T) over the
 * k largest logits (ties at the k-th kept), then the smallest top set holding mass p of that. */
static void expected_probs(const float *x, int V, const ax_sample_params *sp, double *prob) {
    int ord[64];
    for (int i = 0; i < V; i++) ord[i] = i;
    for (int i = 0; i < V; i++) /* selection sort, descending */
        for (int j = i + 1; j < V; j++)
            if (x[ord[j]] > x[ord[i]]) {
                int t = ord[i];
                ord[i] = ord[j], ord[j] = t;
            }
    int keep = sp->top_k > 0 && sp->top_k < V ? sp->top_k : V;
    while (keep < V && x[ord[keep]] == x[ord[keep - 1]]) keep++;
    double z = 0, w[64];
    for (int i = 0; i < keep; i++) z += w[i] = exp((x[ord[i]] - x[ord[0]]) / sp->temperature);
    if (sp->top_p < 1) {
        double c = 0;
        int n = 0;
        while (n < keep && c < sp->top_p * z) c += w[n++];
        keep = n;
        z = c;
    }
    for (int i = 0; i < V; i++) prob[i] = 0;
    for (int i = 0; i < keep; i++) prob[ord[i]] = w[i] / z;
}

Test(memscan_probe, gumbel_sampler_matches_the_truncated_softmax) {
    enum { V = 6, M = 40000 };
    const float row[V] = {2.0f, 1.5f, 1.0f, 0.0f, -1.0f, 0.5f};
    const ax_sample_params cases[] = {{0.8, 0, 1.0, 7},
                                      {1.3, 3, 1.0, 8},
                                      {1.0, 0, 0.75, 9},
                                      {0.5, 4, 0.9, 10},
                                      {2.0, 1, 1.0, 11}};
    float *x = malloc(sizeof *x * (size_t)M * V);
    uint64_t *keys = malloc(sizeof *keys * M);
    int32_t *out = malloc(sizeof *out * M);
    void *work = malloc(ax_sample_work_bytes(M, V));
    for (int b = 0; b < M; b++) memcpy(x + (size_t)b * V, row, sizeof row), keys[b] = (uint64_t)b;
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        double prob[V];
        long cnt[V] = {0};
        expected_probs(row, V, &cases[c], prob);
        cr_assert_eq(ax_sample_rows(x, M, V, V, 0, V, &cases[c], keys, NULL, NULL, work, out),
                     AX_OK, "%s", ax_error_msg());
        for (int b = 0; b < M; b++) {
            cr_assert(out[b] >= 0 && out[b] < V);
            cnt[out[b]]++;
        }
        for (int v = 0; v < V; v++) {
            double f = (double)cnt[v] / M, sd = sqrt(prob[v] * (1 - prob[v]) / M);
            if (prob[v] == 0) cr_assert_eq(cnt[v], 0, "case %zu: id %d outside the kept set", c, v);
            cr_assert(fabs(f - prob[v]) <= 5 * sd + 1e-9,
                      "case %zu id %d: drawn %.4f, softmax %.4f", c, v, f, prob[v]);
        }
    }
    /* ties at the top-k threshold are all kept: k = 2 over {1, 1, 1, 0.5, ...} keeps three */
    const float tied[V] = {1.0f, 0.5f, 1.0f, 0.0f, 1.0f, -1.0f};
    ax_sample_params k2 = {1.0, 2, 1.0, 12};
    for (int b = 0; b < M; b++) memcpy(x + (size_t)b * V, tied, sizeof tied);
    cr_assert_eq(ax_sample_rows(x, M, V, V, 0, V, &k2, keys, NULL, NULL, work, out), AX_OK);
    long tc[V] = {0};
    for (int b = 0; b < M; b++) tc[out[b]]++;
    for (int v = 0; v < V; v++)
        if (tied[v] == 1.0f)
            cr_assert(fabs((double)tc[v] / M - 1.0 / 3) < 5 * sqrt(2.0 / 9 / M), "id %d", v);
        else
            cr_assert_eq(tc[v], 0, "id %d below the threshold drawn", v);
    /* the settings are checked */
    ax_sample_params bad = {0.0, 0, 1.0, 0};
    cr_assert_eq(ax_sample_rows(x, 1, V, V, 0, V, &bad, keys, NULL, NULL, work, out), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "--temperature"), "%s", ax_error_msg());
    ax_error_clear();
    free(x), free(keys), free(out), free(work);
}

/* Shards of one vocabulary on threads, reducing through shared slots: what the model's Y
 * ranks do over MPI. Every shard must draw what the whole row draws. */
enum { SH_MAX = 3 };
typedef struct {
    pthread_barrier_t bar;
    double *slot[SH_MAX];
    int nt;
} shard_bus;
typedef struct {
    shard_bus *bus;
    int t, B, V, v0, valid;
    const float *x;
    const ax_sample_params *sp;
    const uint64_t *keys;
    int32_t *out;
    ax_status st;
} shard_job;

static ax_status shard_reduce(void *ctx, double *buf, int n, int is_max) {
    shard_job *j = ctx;
    shard_bus *bus = j->bus;
    double *tmp = malloc(sizeof *tmp * (size_t)n);
    bus->slot[j->t] = buf;
    pthread_barrier_wait(&bus->bar);
    for (int i = 0; i < n; i++) {
        double a = bus->slot[0][i];
        for (int s = 1; s < bus->nt; s++) {
            double b = bus->slot[s][i];
            a = is_max ? (b > a ? b : a) : a + b;
        }
        tmp[i] = a;
    }
    pthread_barrier_wait(&bus->bar); /* everyone has read every slot */
    memcpy(buf, tmp, sizeof *tmp * (size_t)n);
    free(tmp);
    return AX_OK;
}

static void *shard_main(void *arg) {
    shard_job *j = arg;
    void *work = malloc(ax_sample_work_bytes(j->B, j->valid));
    j->st = ax_sample_rows(j->x + j->v0, j->B, j->V, j->valid, j->v0, j->V, j->sp, j->keys,
                           shard_reduce, j, work, j->out);
    free(work);
    return NULL;
}

Test(memscan_probe, sharded_draws_equal_whole_vocabulary_draws) {
    enum { V = 37, B = 400 };
    float *x = malloc(sizeof *x * B * V);
    uint64_t keys[B];
    for (int b = 0; b < B; b++) {
        keys[b] = 1000 + (uint64_t)b;
        for (int v = 0; v < V; v++)
            x[b * V + v] = 3.0f * ax_rng_normal(5, (uint64_t)b, (uint64_t)v);
        if (b % 7 == 0) x[b * V + 3] = x[b * V + 20]; /* a tie across the shards */
    }
    const ax_sample_params cases[] = {
        {1.0, 0, 1.0, 1}, {0.7, 5, 1.0, 2}, {1.0, 0, 0.8, 3}, {1.5, 10, 0.6, 4}, {0.3, 1, 1.0, 5}};
    void *work = malloc(ax_sample_work_bytes(B, V));
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        int32_t whole[B];
        cr_assert_eq(ax_sample_rows(x, B, V, V, 0, V, &cases[c], keys, NULL, NULL, work, whole),
                     AX_OK);
        for (int nt = 2; nt <= SH_MAX; nt++) {
            shard_bus bus = {.nt = nt};
            pthread_barrier_init(&bus.bar, NULL, (unsigned)nt);
            shard_job jobs[SH_MAX];
            pthread_t th[SH_MAX];
            int32_t outs[SH_MAX][B];
            int Vl = (V + nt - 1) / nt; /* the last shard is shorter, as the model's */
            for (int t = 0; t < nt; t++) {
                int v0 = t * Vl, valid = V - v0 < Vl ? V - v0 : Vl;
                jobs[t] = (shard_job){&bus, t, B, V, v0, valid, x, &cases[c], keys, outs[t], AX_OK};
                pthread_create(&th[t], NULL, shard_main, &jobs[t]);
            }
            for (int t = 0; t < nt; t++) pthread_join(th[t], NULL);
            pthread_barrier_destroy(&bus.bar);
            for (int t = 0; t < nt; t++) {
                cr_assert_eq(jobs[t].st, AX_OK);
                cr_assert_arr_eq(outs[t], whole, sizeof whole, "case %zu, %d shards, shard %d", c,
                                 nt, t);
            }
        }
        /* top-k = 1 is the greedy choice */
        if (cases[c].top_k == 1)
            for (int b = 0; b < B; b++) {
                int best = 0;
                for (int v = 1; v < V; v++)
                    if (x[b * V + v] > x[b * V + best]) best = v;
                cr_assert_eq(whole[b], best, "row %d", b);
            }
    }
    free(x), free(work);
}

/* The probe with draws on the planted dataset of check_probe: draws at top-k 1 and at a
 * temperature near 0 are the greedy continuation (so N of N reproduce where greedy does, 0
 * where it does not); at a high temperature they are not; the same seed reproduces the counts
 * whatever the batching, another seed changes them. */
static void run_draws(ax_model_t *m, const ax_axd_t *ds, int P, int S, int batch, uint64_t seed,
                      ax_sample_params sp, int draws, ax_probe_result *r) {
    ax_probe_config c = {.prefix = P,
                         .suffix = S,
                         .samples = 14,
                         .batch = batch,
                         .seed = seed,
                         .random_offset = 0,
                         .lead_eot = 1,
                         .draws = draws,
                         .sampling = sp};
    cr_assert_eq(ax_probe_run(m, ds, &c, r), AX_OK, "%s", ax_error_msg());
}

Test(memscan_probe, draws_reduce_to_greedy_and_reproduce) {
    int P = 6, S = 10, D = 4, T = P + S;
    ax_model_t *m = tiny_model(T);
    char path[128];
    snprintf(path, sizeof path, "/tmp/axmem_test_%d_draws.axd", (int)getpid());
    make_dataset(path, m, T, P, S, 1);
    ax_axd_t *ds = NULL;
    cr_assert_eq(ax_axd_open(path, 1, &ds), AX_OK, "%s", ax_error_msg());
    ax_probe_result g, r;
    run_draws(m, ds, P, S, 4, 3, (ax_sample_params){1.0, 0, 1.0, 0}, 0, &g);
    int exact = 0;
    for (int i = 0; i < g.n; i++) {
        exact += g.s[i].exact;
        cr_assert_eq(g.s[i].sampled_exact, 0);
    }
    cr_assert(exact >= 3, "only %d greedy exact", exact);
    const ax_sample_params greedy_like[] = {{1.0, 1, 1.0, 0}, {1e-6, 0, 1.0, 0}, {1e-6, 0, 0.9, 0}};
    for (size_t c = 0; c < sizeof greedy_like / sizeof *greedy_like; c++) {
        run_draws(m, ds, P, S, 4, 3, greedy_like[c], D, &r);
        for (int i = 0; i < r.n; i++) {
            cr_assert_eq(r.s[i].doc, g.s[i].doc);
            cr_assert_arr_eq(r.s[i].generated, g.s[i].generated, sizeof(int32_t) * S);
            cr_assert_eq(r.s[i].sampled_exact, g.s[i].exact ? D : 0, "case %zu sample %d: %d of %d",
                         c, i, r.s[i].sampled_exact, D);
        }
        ax_probe_result_free(&r);
    }
    /* hot draws: some greedy-exact probe loses a draw; the counts depend on the seed only */
    ax_sample_params hot = {3.0, 0, 1.0, 0};
    ax_probe_result a, b, o;
    run_draws(m, ds, P, S, 4, 3, hot, 8, &a);
    run_draws(m, ds, P, S, 3, 3, hot, 8, &b);  /* other batching: same draws */
    run_draws(m, ds, P, S, 4, 99, hot, 8, &o); /* other seed: other documents and draws */
    int lost = 0, same = 1;
    for (int i = 0; i < a.n; i++) {
        cr_assert_eq(a.s[i].sampled_exact, b.s[i].sampled_exact, "sample %d", i);
        lost += a.s[i].exact && a.s[i].sampled_exact < 8;
        same &= a.s[i].doc == o.s[i].doc && a.s[i].sampled_exact == o.s[i].sampled_exact;
    }
    cr_assert(lost > 0, "hot sampling reproduced every greedy-exact suffix 8 of 8 times");
    cr_assert(!same, "another seed gave the same probes and counts");
    ax_probe_result_free(&a), ax_probe_result_free(&b), ax_probe_result_free(&o);
    ax_probe_result_free(&g);
    ax_axd_free(ds);
    ax_model_free(m);
    unlink(path);
}

/* deep offsets start at least P + S tokens into documents of at least 2 (P + S) tokens */
Test(memscan_probe, deep_offsets) {
    int P = 5, S = 5, T = P + S;
    ax_model_t *m = tiny_model(T);
    char path[128];
    snprintf(path, sizeof path, "/tmp/axmem_test_%d_deep.axd", (int)getpid());
    make_dataset(path, m, T, P, S, 0);
    ax_axd_t *ds = NULL;
    cr_assert_eq(ax_axd_open(path, 1, &ds), AX_OK, "%s", ax_error_msg());
    ax_probe_config c = {.prefix = P,
                         .suffix = S,
                         .samples = 20,
                         .batch = 4,
                         .seed = 1,
                         .random_offset = AX_PROBE_DEEP};
    ax_probe_result r;
    /* 20 probes of 14 documents repeat some: refused unless repeats are asked for */
    cr_assert_eq(ax_probe_run(m, ds, &c, &r), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "--repeat-docs"), "%s", ax_error_msg());
    ax_error_clear();
    c.repeat = 1;
    cr_assert_eq(ax_probe_run(m, ds, &c, &r), AX_OK, "%s", ax_error_msg());
    const uint64_t *off = ax_axd_doc_offsets(ds);
    uint64_t lo = ~0ull, hi = 0;
    for (int i = 0; i < r.n; i++) {
        uint64_t len = off[r.s[i].doc + 1] - off[r.s[i].doc] - 1;
        cr_assert(r.s[i].offset >= (uint64_t)(P + S), "sample %d at %llu", i,
                  (unsigned long long)r.s[i].offset);
        cr_assert(r.s[i].offset + (uint64_t)(P + S) <= len);
        lo = r.s[i].offset < lo ? r.s[i].offset : lo, hi = r.s[i].offset > hi ? r.s[i].offset : hi;
    }
    cr_assert(hi > lo, "deep offsets all %llu", (unsigned long long)lo);
    ax_probe_result_free(&r);
    c.prefix = 20, c.suffix = 5; /* 2 x 25 tokens: no document is that long */
    cr_assert_eq(ax_probe_run(m, ds, &c, &r), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "--offset random"), "%s", ax_error_msg());
    ax_error_clear();
    ax_axd_free(ds);
    ax_model_free(m);
    unlink(path);
}

/* a JSON file parsed (the caller frees both) */
static ax_json *json_load(const char *path, char **text) {
    size_t len;
    ax_json *j = NULL;
    cr_assert_eq(ax_read_file(path, text, &len), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(ax_json_parse(*text, len, path, &j), AX_OK, "%s", ax_error_msg());
    return j;
}

/* A hash-goldfish run: every sample's goldfish_dropped is the mask recomputed here from the
 * dataset with XXH3 (goldfish/goldfish.h's definition), first_divergence is the greedy
 * continuation's first mismatch, and the scan's audit numbers add up from the samples. With
 * several prefix lengths and draws, the first length's numbers equal a run at that length. */
Test(memscan_probe, goldfish_audit_and_prefix_lengths) {
    char data[128], run[128], scan[160], one[160];
    int pid = (int)getpid();
    snprintf(data, sizeof data, "/tmp/axmem_test_%d_gf.axd", pid);
    snprintf(run, sizeof run, "/tmp/axmem_test_%d_gfrun", pid);
    snprintf(scan, sizeof scan, "/tmp/axmem_test_%d_gf.json", pid);
    snprintf(one, sizeof one, "/tmp/axmem_test_%d_gf1.json", pid);
    make_run_gf(data, run, "hash:k=3,h=2,seed=5");
    ax_ms_probe_opts po;
    ax_ms_probe_summary ps, p1;
    probe_opts(&po, run, data, scan);
    snprintf(po.offset, sizeof po.offset, "random");
    snprintf(po.prefix_lengths, sizeof po.prefix_lengths, "4,8");
    po.samples = 10, po.suffix = 12, po.batch = 4, po.samples_per_prefix = 3, po.top_k = 5;
    cr_assert_eq(ax_ms_probe_run(&po, &ps), AX_OK, "%s", ax_error_msg());
    cr_assert(ps.audited && ps.draws == 3);
    /* the same probe at the first length alone */
    po.prefix_lengths[0] = 0, po.prefix = 4;
    snprintf(po.out, sizeof po.out, "%s", one);
    cr_assert_eq(ax_ms_probe_run(&po, &p1), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(p1.exact_match.mean, ps.exact_match.mean);
    cr_assert_eq(p1.sampled_p_mean, ps.sampled_p_mean);
    cr_assert_eq(p1.sampled_any_rate, ps.sampled_any_rate);
    cr_assert_eq(p1.diverged, ps.diverged);
    cr_assert_eq(p1.diverged_on_dropped, ps.diverged_on_dropped);

    ax_axd_t *ds = NULL;
    cr_assert_eq(ax_axd_open(data, 1, &ds), AX_OK, "%s", ax_error_msg());
    const uint64_t *off = ax_axd_doc_offsets(ds);
    uint64_t thr = UINT64_MAX / 3 + (UINT64_MAX % 3 == 2);
    char *text = NULL;
    size_t len;
    cr_assert_eq(ax_read_file(ps.samples_path, &text, &len), AX_OK, "%s", ax_error_msg());
    int lines = 0, div = 0, on = 0, dropped_total = 0, per_len[2] = {0, 0};
    for (char *save = NULL, *ln = strtok_r(text, "\n", &save); ln;
         ln = strtok_r(NULL, "\n", &save)) {
        ax_json *j = NULL;
        cr_assert_eq(ax_json_parse(ln, strlen(ln), "samples", &j), AX_OK, "%s", ax_error_msg());
        int P = (int)ax_json_get(j, "prefix")->num, doc = (int)ax_json_get(j, "doc")->num;
        uint64_t o = (uint64_t)ax_json_get(j, "offset")->num;
        per_len[P == 8]++;
        cr_assert(P == 4 || P == 8);
        const ax_json *dr = ax_json_get(j, "goldfish_dropped"),
                      *fd = ax_json_get(j, "first_divergence");
        cr_assert(dr && dr->type == AX_JSON_ARR && fd);
        int32_t toks[64];
        uint64_t dlen = off[doc + 1] - off[doc];
        ax_axd_tokens(ds, off[doc], dlen, toks);
        int want[12], n_want = 0;
        for (int k = 0; k < 12; k++) {
            uint64_t q = o + (uint64_t)P + (uint64_t)k; /* document position of suffix token k */
            if (q >= 2 && XXH3_64bits_withSeed(toks + q - 2, 2 * sizeof(int32_t), 5) < thr)
                want[n_want++] = k;
        }
        cr_assert_eq(dr->n, (size_t)n_want, "doc %d offset %llu P %d", doc, (unsigned long long)o,
                     P);
        for (int k = 0; k < n_want; k++) cr_assert_eq((int)dr->items[k]->num, want[k]);
        int exact = ax_json_get(j, "exact")->num != 0;
        int mp = (int)ax_json_get(j, "matched_prefix")->num;
        const ax_json *sx = ax_json_get(j, "sampled_exact");
        cr_assert(sx && sx->num >= 0 && sx->num <= 3);
        cr_assert_eq(ax_json_get(j, "p_hat")->num, sx->num / 3);
        if (exact) {
            cr_assert_eq(fd->type, AX_JSON_NULL);
        } else {
            cr_assert_eq((int)fd->num, mp);
            if (P == 4) {
                div++, dropped_total += n_want;
                for (int k = 0; k < n_want; k++) on += want[k] == mp;
            }
        }
        ax_json_free(j);
        lines++;
    }
    free(text);
    cr_assert_eq(lines, 20);
    cr_assert(per_len[0] == 10 && per_len[1] == 10);
    cr_assert(dropped_total > 0, "no suffix position was dropped");
    cr_assert_eq(ps.diverged, div);
    cr_assert_eq(ps.diverged_on_dropped, on);
    cr_assert_float_eq(ps.dropped_fraction, (double)dropped_total / (div * 12.0), 1e-12);
    cr_assert_eq(json_num(scan, "metrics/goldfish_divergence/dropped_fraction"),
                 ps.dropped_fraction);
    cr_assert_eq(json_num(scan, "metrics/sampled_any_match_rate/mean"), ps.sampled_any_rate);
    cr_assert_eq(json_num(scan, "tables/by_prefix_length/1/prefix"), 8);
    cr_assert_eq(json_num(scan, "tables/by_prefix_length/0/exact_match_rate"), ps.exact_match.mean);
    char *t2 = NULL;
    ax_json *sj = json_load(scan, &t2);
    const ax_json *cfg = ax_json_get(sj, "config");
    cr_assert_str_eq(ax_json_get(cfg, "goldfish")->str, "hash:k=3,h=2,seed=5");
    ax_json_free(sj), free(t2);
    /* bad settings name their flag */
    snprintf(po.prefix_lengths, sizeof po.prefix_lengths, "4,x");
    cr_assert_eq(ax_ms_probe_run(&po, &ps), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "--prefix-lengths"), "%s", ax_error_msg());
    ax_error_clear();
    po.prefix_lengths[0] = 0, po.top_p = 0;
    cr_assert_eq(ax_ms_probe_run(&po, &ps), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "--top-p"), "%s", ax_error_msg());
    ax_error_clear();
    ax_axd_free(ds);
    ax_rm_rf(run);
}

/* A static-goldfish run (packed windows): the dropped suffix positions in the samples file are
 * those of the training loop's own masks, rebuilt here window by window through the loader. */
Test(memscan_probe, goldfish_audit_static_matches_training_windows) {
    char data[128], run[128], scan[160];
    int pid = (int)getpid(), T = 32;
    snprintf(data, sizeof data, "/tmp/axmem_test_%d_gfs.axd", pid);
    snprintf(run, sizeof run, "/tmp/axmem_test_%d_gfsrun", pid);
    snprintf(scan, sizeof scan, "/tmp/axmem_test_%d_gfs.json", pid);
    make_run_gf(data, run, "static:k=3");
    ax_ms_probe_opts po;
    ax_ms_probe_summary ps;
    probe_opts(&po, run, data, scan);
    snprintf(po.offset, sizeof po.offset, "random");
    po.samples = 12, po.prefix = 5, po.suffix = 10, po.batch = 4;
    cr_assert_eq(ax_ms_probe_run(&po, &ps), AX_OK, "%s", ax_error_msg());
    cr_assert(ps.audited);
    /* the training masks over the token stream: window g's target i is stream token start+1+i */
    ax_axd_t *ds = NULL;
    ax_loader_t *ld = NULL;
    ax_goldfish gf;
    cr_assert_eq(ax_axd_open(data, 1, &ds), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(ax_loader_create(ds, T, 0, &ld), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(ax_goldfish_parse("static:k=3", &gf), AX_OK);
    uint64_t nt = ax_axd_n_tokens(ds);
    uint8_t *drop = calloc(nt, 1);
    int32_t win[64];
    uint32_t pos[64];
    uint8_t keep[64];
    for (uint64_t g = 0; g < ax_loader_n_windows(ld); g++) {
        uint64_t start = ax_loader_start(ld, g);
        ax_loader_sample(ld, g, win, pos);
        ax_goldfish_mask(&gf, win + 1, pos + 1, T, keep);
        for (int i = 0; i < T; i++) drop[start + 1 + (uint64_t)i] = !keep[i];
    }
    const uint64_t *off = ax_axd_doc_offsets(ds);
    char *text = NULL;
    size_t len;
    cr_assert_eq(ax_read_file(ps.samples_path, &text, &len), AX_OK, "%s", ax_error_msg());
    int lines = 0, seen = 0;
    for (char *save = NULL, *ln = strtok_r(text, "\n", &save); ln;
         ln = strtok_r(NULL, "\n", &save)) {
        ax_json *j = NULL;
        cr_assert_eq(ax_json_parse(ln, strlen(ln), "samples", &j), AX_OK, "%s", ax_error_msg());
        uint64_t at = off[(uint64_t)ax_json_get(j, "doc")->num] +
                      (uint64_t)ax_json_get(j, "offset")->num + 5; /* suffix token 0 */
        const ax_json *dr = ax_json_get(j, "goldfish_dropped");
        size_t m = 0;
        for (int k = 0; k < 10; k++)
            if (drop[at + (uint64_t)k]) {
                cr_assert(m < dr->n && (int)dr->items[m]->num == k, "line %d offset %d", lines, k);
                m++;
            }
        cr_assert_eq(m, dr->n, "line %d: %zu dropped listed, %zu in training", lines, dr->n, m);
        seen += (int)m;
        ax_json_free(j);
        lines++;
    }
    cr_assert_eq(lines, 12);
    cr_assert(seen > 0);
    free(text), free(drop);
    ax_loader_free(ld);
    ax_axd_free(ds);
    ax_rm_rf(run);
}

/* ---- probes clustered by document (--repeat-docs): intervals that account for repeats ---- */

/* Clopper-Pearson at real counts: beta quantiles, equal to the binomial-sum interval at
 * integers, and scipy's values at real ones (tests/unit/ref/clustered_ci.py) */
Test(memscan_probe, clopper_pearson_at_real_counts) {
    double lo, hi, lo2, hi2;
    for (long n = 1; n <= 60; n += 7)
        for (long k = 0; k <= n; k++) {
            ax_clopper_pearson(k, n, &lo, &hi);
            ax_clopper_pearson_real((double)k, (double)n, &lo2, &hi2);
            cr_assert_float_eq(lo, lo2, 1e-9, "k %ld n %ld: %g vs %g", k, n, lo, lo2);
            cr_assert_float_eq(hi, hi2, 1e-9, "k %ld n %ld: %g vs %g", k, n, hi, hi2);
        }
    ax_clopper_pearson_real(2.5, 37.3, &lo, &hi);
    cr_assert_float_eq(lo, 0.0113085398995, 1e-10, "%.12g", lo);
    cr_assert_float_eq(hi, 0.199336058598, 1e-10, "%.12g", hi);
    ax_clopper_pearson_real(0.7, 5.2, &lo, &hi);
    cr_assert_float_eq(lo, 0.000839832046159, 1e-12, "%.12g", lo);
    cr_assert_float_eq(hi, 0.649854330278, 1e-10, "%.12g", hi);
}

/* the test data of tests/unit/ref/clustered_ci.py: document d (id 100 + 3d) has 1 + d % 4
 * probes, mostly all exact or all not */
static int clustered_data(double *x, uint64_t *cl) {
    int n = 0;
    for (int d = 0; d < 12; d++)
        for (int j = 0; j < 1 + d % 4; j++, n++) {
            x[n] = d % 3 == 0 || (d * 7 + j * 3) % 11 == 0;
            cl[n] = 100 + 3 * (uint64_t)d;
        }
    return n;
}

Test(memscan_probe, clustered_intervals_match_reference) {
    double x[64], mean, lo, hi, ne;
    uint64_t cl[64];
    int n = clustered_data(x, cl);
    cr_assert_eq(n, 30);
    /* Korn-Graubard: n* = p(1 - p) / v = 12.375 of 30 probes (scipy reference) */
    ax_clopper_pearson_clustered(x, cl, n, &mean, &lo, &hi, &ne);
    cr_assert_float_eq(mean, 0.4, 1e-12);
    cr_assert_float_eq(ne, 12.375, 1e-9, "%.12g", ne);
    cr_assert_float_eq(lo, 0.14378056696, 1e-9, "%.12g", lo);
    cr_assert_float_eq(hi, 0.704812905591, 1e-9, "%.12g", hi);
    double ilo, ihi; /* wider than the interval that takes the 30 probes as independent */
    ax_clopper_pearson(12, 30, &ilo, &ihi);
    cr_assert(lo < ilo && hi > ihi, "[%g, %g] vs independent [%g, %g]", lo, hi, ilo, ihi);
    /* no success at all: each document counts once (12 of them), not each probe */
    for (int i = 0; i < n; i++) x[i] = 0;
    ax_clopper_pearson_clustered(x, cl, n, &mean, &lo, &hi, &ne);
    cr_assert_eq(ne, 12);
    cr_assert_eq(lo, 0);
    cr_assert_float_eq(hi, 0.264648469397, 1e-9, "%.12g", hi);
}

/* The cluster bootstrap resamples documents: with one probe a document it is the plain
 * bootstrap, draw for draw; probing every document three times with the same outcomes gives
 * exactly the interval of probing each once (the repeats add no information) */
Test(memscan_probe, cluster_bootstrap_counts_documents) {
    double x[300], x3[900], m1, l1, h1, m2, l2, h2;
    uint64_t id[300], id3[900];
    for (int i = 0; i < 300; i++) {
        x[i] = (double)((i * 37) % 101) / 100.0;
        id[i] = 5000 + (uint64_t)i; /* ascending ids: the same cluster order as the probes */
        for (int r = 0; r < 3; r++) x3[3 * i + r] = x[i], id3[3 * i + r] = id[i];
    }
    ax_bootstrap_ci(x, 300, 1000, 9, &m1, &l1, &h1);
    ax_bootstrap_ci_clustered(x, id, 300, 1000, 9, &m2, &l2, &h2);
    cr_assert_eq(m1, m2);
    cr_assert_eq(l1, l2);
    cr_assert_eq(h1, h2);
    ax_bootstrap_ci_clustered(x3, id3, 900, 1000, 9, &m2, &l2, &h2);
    cr_assert_float_eq(m1, m2, 1e-12);
    cr_assert_float_eq(l1, l2, 1e-12);
    cr_assert_float_eq(h1, h2, 1e-12);
    double l3, h3; /* the triplicates taken as independent: a narrower, wrong interval */
    ax_bootstrap_ci(x3, 900, 1000, 9, &m2, &l3, &h3);
    cr_assert(h3 - l3 < 0.8 * (h1 - l1), "%g vs %g", h3 - l3, h1 - l1);
}

/* The context generate is bounded by: a trained run's seq-len, a learned position table's rows,
 * and for a run fine-tuned with --init the larger context of the checkpoint it started from;
 * --length beyond it is refused before the model is built, naming the limit */
Test(memscan_probe, generate_length_bounded_by_the_context) {
    char data[128], run[128], ft[128], lp[128], idx[128], out[160];
    int pid = (int)getpid();
    snprintf(data, sizeof data, "/tmp/axmem_test_%d_ctx.axd", pid);
    snprintf(run, sizeof run, "/tmp/axmem_test_%d_ctxrun", pid);
    snprintf(ft, sizeof ft, "/tmp/axmem_test_%d_ctxft", pid);
    snprintf(lp, sizeof lp, "/tmp/axmem_test_%d_ctxlp", pid);
    snprintf(idx, sizeof idx, "/tmp/axmem_test_%d_ctx.idx", pid);
    snprintf(out, sizeof out, "/tmp/axmem_test_%d_ctxg/g.json", pid);
    make_run(data, run); /* seq-len 32 */
    ax_train_config c;
    ax_train_result r;
    cr_assert_eq(ax_cfg_set_defaults(&ax_train_table, &c), AX_OK);
    snprintf(c.data, sizeof c.data, "%s", data);
    snprintf(c.out, sizeof c.out, "%s", ft);
    snprintf(c.init, sizeof c.init, "%s", run);
    c.seq_len = 16, c.batch = 2, c.steps = 1, c.warmup = 0, c.threads = 1;
    cr_assert_eq(ax_train_run(&c, NULL, &r), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(ax_cfg_set_defaults(&ax_train_table, &c), AX_OK);
    snprintf(c.data, sizeof c.data, "%s", data);
    snprintf(c.out, sizeof c.out, "%s", lp);
    snprintf(c.pos, sizeof c.pos, "learned");
    c.layers = 1, c.dim = 16, c.heads = 2, c.ffn = 24, c.max_pos = 24;
    c.seq_len = 20, c.batch = 2, c.steps = 1, c.warmup = 0, c.threads = 1;
    cr_assert_eq(ax_train_run(&c, NULL, &r), AX_OK, "%s", ax_error_msg());
    struct {
        const char *dir;
        int want;
        const char *src;
    } cases[] = {{run, 32, "seq-len"}, {ft, 32, "--init"}, {lp, 24, "max-pos"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        ax_ckpt_t *ck = NULL;
        cr_assert_eq(ax_ms_ckpt_open(cases[i].dir, &ck), AX_OK, "%s", ax_error_msg());
        int ctx = 0;
        const char *src = NULL;
        cr_assert_eq(ax_ms_model_context(ck, &ctx, &src), AX_OK, "%s", ax_error_msg());
        cr_assert_eq(ctx, cases[i].want, "case %zu: %d (%s)", i, ctx, src);
        cr_assert(strstr(src, cases[i].src), "case %zu: %s", i, src);
        ax_ckpt_free(ck);
    }
    /* through the scan: 33 tokens refused naming the 32, 32 run */
    save_index(data, 4, idx, NULL);
    ax_ms_generate_opts go;
    ax_ms_generate_summary gs;
    generate_opts(&go, ft, idx, out);
    go.samples = 2, go.length = 33, go.batch = 2;
    cr_assert_eq(ax_ms_generate_run(&go, &gs), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "--length 33 exceeds the model's context") &&
                  strstr(ax_error_msg(), "at most 32 positions"),
              "%s", ax_error_msg());
    ax_error_clear();
    go.length = 32;
    cr_assert_eq(ax_ms_generate_run(&go, &gs), AX_OK, "%s", ax_error_msg());
    cr_assert(gs.written && ax_path_exists(out), "generate made --out's folder");
    ax_rm_rf(run), ax_rm_rf(ft), ax_rm_rf(lp);
}
