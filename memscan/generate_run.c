/* `axmem memscan generate` as a library call (memscan/generate_run.h): the settings table, the
 * run, and the scan writer (regurgitation.json in schema axmem-scan v1 +
 * regurgitation.samples.jsonl, published together by memscan/scan_out.h). */
#include "memscan/generate_run.h"
#include "data/axd.h"
#include "data/tokenizer.h"
#include "lib/dist/comm.h"
#include "lib/core/json.h"
#include "lib/core/timer.h"
#include "memscan/generate.h"
#include "index/index.h"
#include "memscan/model_load.h"
#include "memscan/scan_inputs.h"

#include <omp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --length's default where the model's context is at least this long */
#define GENERATE_DEFAULT_LENGTH 128

#define F(field) offsetof(ax_ms_generate_opts, field)
static const ax_cfg_entry entries[] = {
    AX_CFG_CKPT_ENTRY(F),
    AX_CFG_INDEX_ENTRY(F, "training-set index from `axmem memscan index`"),
    AX_CFG_DATA_ENTRY(F, "the indexed dataset (.axd; default: the path stored in the index)"),
    AX_CFG_TOKENIZER_ENTRY(F, "optional: adds text to the samples file"),
    {"samples", AX_CFG_INT, F(samples), "64", 1, 1e8, "generations"},
    {"length", AX_CFG_INT, F(length), "0", 0, 1e5,
     "tokens per generation, >= 2 (0: 128, or the model's context when that is shorter; at "
     "most the context: its learned positions, or the sequence length it was trained or made "
     "for; longer is refused)"},
    {"temperature", AX_CFG_FLOAT, F(temperature), "1.0", 0, 100,
     "sampling temperature (0 = greedy)"},
    {"top-k", AX_CFG_INT, F(top_k), "40", 0, 1e7, "sample among the k likeliest tokens (0 = all)"},
    AX_CFG_SEED_ENTRY(F, "0", "sampling seed (same seed, same generations)"),
    {"batch", AX_CFG_INT, F(batch), "32", 1, 1e6, "sequences decoded together per rank"},
    {"max-sources", AX_CFG_INT, F(max_sources), "8", 0, 1e6,
     "documents listed per span (all are counted)"},
    {"not-training-data", AX_CFG_BOOL, F(not_training_data), "false", 1, 0,
     "scan against an index of other data than the model's training data (refused without it: "
     "it would not measure what the model memorized); recorded in the scan"},
    {"allow-other-tokenizer", AX_CFG_BOOL, F(allow_other_tokenizer), "false", 1, 0,
     "accept an index of data encoded by another tokenizer than the training data's"},
    AX_MS_SCAN_RUN_ENTRIES(
        F, "regurgitation.json",
        "per-generation results, mode 0600 (default: --out's name with .samples.jsonl for .json, "
        "e.g. regurgitation.samples.jsonl)"),
};
#undef F

const ax_cfg_table ax_ms_generate_table = {
    .usage = "axmem memscan generate --ckpt DIR --index INDEX [flags]",
    .summary =
        "Regurgitation scan: sample free generations (temperature / top-k, seeded, KV\n"
        "cache) and report every verbatim span of >= n training tokens (n = the index's\n"
        "window), maximal against every occurrence in the training data, with how many\n"
        "documents hold it and up to --max-sources of them, the longest span per generation,\n"
        "and the fraction of generations that contain one. The index must be of the\n"
        "checkpoint's training data (--not-training-data for another corpus), and --length\n"
        "at most the model's context.",
    .entries = entries,
    .n = (int)(sizeof entries / sizeof entries[0]),
};

/* The indexed data against the checkpoint's training data (memscan/scan_inputs.h). */
typedef struct {
    ax_ms_train_data td;
    ax_ms_scan_data sd;
    int verdict; /* 1: the training data, 0: other data, -1: unknown */
} data_check;

/* Before the model is built: the generation length (*length: --length, or its default within
 * the model's context), and the index of its training data (or knowingly not, with
 * --not-training-data). */
static ax_status check_inputs(const ax_ms_generate_opts *fl, const ax_memscan_info *info,
                              const ax_axd_t *ds, long *length, data_check *dc) {
    ax_ckpt_t *ck = NULL;
    AX_CHECK(ax_ms_ckpt_open(fl->ckpt, &ck));
    int ctx = 0;
    const char *src = "";
    ax_status st = ax_ms_model_context(ck, &ctx, &src);
    *length = (long)fl->length;
    if (!*length)
        *length = ctx > 0 && ctx < GENERATE_DEFAULT_LENGTH ? ctx : GENERATE_DEFAULT_LENGTH;
    if (st == AX_OK && *length < 2)
        st = ax_errorf(AX_ERR_ARG, "--length %ld: a generation needs at least 2 tokens", *length);
    if (st == AX_OK && ctx > 0 && *length > ctx) /* positions 0..length-1 are decoded */
        st = ax_errorf(AX_ERR_ARG,
                       "--length %ld exceeds the model's context: checkpoint %s decodes at most "
                       "%d positions (its %s); ask for --length %d or less",
                       *length, ax_ckpt_path(ck), ctx, src, ctx);
    ax_ms_scan_data *sd = &dc->sd;
    snprintf(sd->what, sizeof sd->what, "the dataset of --index %s (%s)", fl->index,
             ax_axd_path(ds));
    sd->cmd = "generate";
    sd->xxh3 = info->ds_checksum;
    sd->tokenizer = ax_axd_tokenizer_checksum(ds);
    sd->not_training_data = fl->not_training_data;
    sd->other_tokenizer = fl->allow_other_tokenizer;
    sd->refuse_other = 1;
    if (st == AX_OK) st = ax_ms_check_scan_data(ck, &dc->sd, &dc->td, &dc->verdict);
    ax_ckpt_free(ck);
    return st;
}

/* Spans of every generation -> the samples file; returns the aggregate numbers. */
static ax_status scan_all(const ax_ms_generate_opts *fl, long L, const ax_memscan_index_t *idx,
                          const int32_t *gen, const ax_tokenizer_t *tok, ax_ms_scan_out *so,
                          long *with_span, double *mean_longest, long *max_longest, long *hist) {
    ax_status st = AX_OK;
    long n = ax_memscan_index_info(idx)->n;
    *with_span = 0, *mean_longest = 0, *max_longest = 0;
    for (long i = 0; st == AX_OK && i < fl->samples; i++) {
        const int32_t *g = gen + i * L;
        ax_memscan_span *spans = NULL;
        size_t ns = 0;
        AX_CHECK_GOTO(
            ax_memscan_find_spans(idx, g, (size_t)L, (size_t)fl->max_sources, &spans, &ns), done);
        long longest = ns ? (long)spans[0].len : 0; /* longest first */
        *with_span += ns > 0;
        *mean_longest += (double)longest;
        if (longest > *max_longest) *max_longest = longest;
        hist[longest == 0 ? 0 : longest < 2 * n ? 1 : longest < 4 * n ? 2 : 3]++;
        ax_jw w;
        ax_jw_init(&w);
        ax_jw_obj_begin(&w);
        ax_jw_key(&w, "i"), ax_jw_int(&w, i);
        ax_jw_key(&w, "longest_span"), ax_jw_int(&w, longest);
        ax_jw_key(&w, "spans");
        ax_jw_arr_begin(&w);
        for (size_t k = 0; k < ns; k++) {
            ax_jw_obj_begin(&w);
            ax_jw_key(&w, "start"), ax_jw_uint(&w, spans[k].start);
            ax_jw_key(&w, "len"), ax_jw_uint(&w, spans[k].len);
            ax_jw_key(&w, "doc"), ax_jw_uint(&w, spans[k].doc);
            ax_jw_key(&w, "doc_offset"), ax_jw_uint(&w, spans[k].doc_off);
            ax_jw_key(&w, "occurrences"), ax_jw_uint(&w, spans[k].occurrences);
            ax_jw_key(&w, "sources"), ax_jw_uint(&w, spans[k].docs);
            ax_jw_key(&w, "docs");
            ax_jw_arr_begin(&w);
            for (size_t d = 0; d < spans[k].n_sources; d++) {
                ax_jw_obj_begin(&w);
                ax_jw_key(&w, "doc"), ax_jw_uint(&w, spans[k].sources[d].doc);
                ax_jw_key(&w, "offset"), ax_jw_uint(&w, spans[k].sources[d].doc_off);
                ax_jw_obj_end(&w);
            }
            ax_jw_arr_end(&w);
            ax_jw_key(&w, "window_count_max"), ax_jw_uint(&w, spans[k].count_max);
            ax_ms_text_field(&w, "text", tok, g + spans[k].start, spans[k].len);
            ax_jw_obj_end(&w);
        }
        ax_jw_arr_end(&w);
        ax_ms_json_ids(&w, "tokens", g, (size_t)L);
        ax_ms_text_field(&w, "text", tok, g, (size_t)L);
        ax_jw_obj_end(&w);
        st = ax_ms_scan_out_line(so, &w);
        ax_jw_free(&w);
        free(spans);
    }
done:
    *mean_longest /= (double)fl->samples;
    return st;
}

static ax_status write_scan(const ax_ms_generate_opts *fl, long length, const ax_ms_model *mm,
                            const ax_memscan_index_t *idx, const data_check *dc, ax_ms_scan_out *so,
                            ax_ms_generate_summary *sum) {
    const ax_memscan_info *in = ax_memscan_index_info(idx);
    ax_jw w;
    ax_jw_init(&w);
    ax_ms_scan_header(&w, "regurgitation-scan", mm->ck, in->ds_path, in->ds_checksum, in->ds_docs,
                      in->ds_tokens);
    ax_ms_scan_data_json(&w, &dc->td, &dc->sd, dc->verdict);
    ax_jw_key(&w, "config");
    ax_jw_obj_begin(&w);
    ax_jw_key(&w, "index"), ax_jw_str(&w, fl->index);
    ax_jw_key(&w, "not_training_data"), ax_jw_bool(&w, fl->not_training_data);
    ax_jw_key(&w, "allow_other_tokenizer"), ax_jw_bool(&w, fl->allow_other_tokenizer);
    ax_jw_key(&w, "n"), ax_jw_int(&w, in->n);
    ax_jw_key(&w, "max_sources"), ax_jw_int(&w, fl->max_sources);
    ax_jw_key(&w, "samples"), ax_jw_int(&w, fl->samples);
    ax_jw_key(&w, "length"), ax_jw_int(&w, length);
    ax_jw_key(&w, "temperature"), ax_jw_num(&w, fl->temperature);
    ax_jw_key(&w, "top_k"), ax_jw_int(&w, fl->top_k);
    ax_jw_key(&w, "seed"), ax_jw_int(&w, fl->seed);
    ax_jw_obj_end(&w);
    ax_jw_key(&w, "metrics");
    ax_jw_obj_begin(&w);
    ax_jw_key(&w, "frac_with_verbatim_span"),
        ax_jw_num(&w, (double)sum->with_span / (double)fl->samples);
    ax_jw_key(&w, "mean_longest_span"), ax_jw_num(&w, sum->mean_longest_span);
    ax_jw_key(&w, "max_longest_span"), ax_jw_int(&w, sum->max_longest_span);
    ax_jw_obj_end(&w);
    ax_jw_key(&w, "tables");
    ax_jw_obj_begin(&w);
    ax_jw_key(&w, "longest_span_hist");
    ax_jw_obj_begin(&w);
    static const char *labels[4] = {"none", "n..2n-1", "2n..4n-1", ">=4n"};
    for (int k = 0; k < 4; k++) ax_jw_key(&w, labels[k]), ax_jw_int(&w, sum->longest_span_hist[k]);
    ax_jw_obj_end(&w);
    ax_jw_obj_end(&w);
    return ax_ms_scan_out_finish(so, &w, AX_OK, &sum->written, sum->scan, sum->samples_path);
}

ax_status ax_ms_generate_run(const ax_ms_generate_opts *fl, ax_ms_generate_summary *sum) {
    memset(sum, 0, sizeof *sum);
    if (!fl->ckpt[0] || !fl->index[0])
        return ax_errorf(AX_ERR_ARG,
                         "--ckpt and --index are required; see axmem memscan generate --help");
    if (fl->threads > 0) omp_set_num_threads((int)fl->threads);
    ax_ms_model mm = {0};
    ax_axd_t *ds = NULL;
    ax_memscan_index_t *idx = NULL;
    ax_tokenizer_t *tok = NULL;
    int32_t *gen = NULL;
    ax_ms_scan_out so = {0};
    ax_status st = AX_OK;
    ax_memscan_info info;
    long length = 0;
    data_check dc;
    memset(&dc, 0, sizeof dc);
    AX_CHECK_GOTO(ax_memscan_index_read_info(fl->index, 0, &info), out);
    AX_CHECK_GOTO(ax_axd_open(fl->data[0] ? fl->data : info.ds_path, 1, &ds), out);
    /* read in place: only the pages the generations' windows touch (damage fails the scan) */
    AX_CHECK_GOTO(ax_memscan_index_open(fl->index, ds, &idx), out);
    if (fl->tokenizer[0]) AX_CHECK_GOTO(ax_tokenizer_load(fl->tokenizer, &tok), out);
    if (tok) AX_CHECK_GOTO(ax_axd_check_tokenizer(ds, tok, fl->tokenizer), out);
    AX_CHECK_GOTO(check_inputs(fl, &info, ds, &length, &dc), out);
    AX_CHECK_GOTO(ax_comm_select(fl->comm), out);
    AX_CHECK_GOTO(ax_ms_model_open(fl->ckpt, fl->grid, AX_CFG_DEVICE_SPEC(fl), (int)fl->batch,
                                   (int)length, &mm),
                  out);
    /* --out's folder before the decoding (rank 0 writes; every rank learns the verdict) */
    st = ax_grid_rank(mm.grid) == 0 ? ax_ms_scan_out_prepare(fl->out, fl->samples_out) : AX_OK;
    AX_CHECK_GOTO(ax_coll_agree(mm.grid, AX_AXIS_WORLD, st, "memscan generate --out"), out);
    if (ax_axd_vocab_size(ds) > (uint32_t)mm.cfg.vocab) {
        st = ax_errorf(AX_ERR_MISMATCH,
                       "the indexed dataset has vocabulary %u but the model %d; "
                       "scan against the model's training data",
                       ax_axd_vocab_size(ds), mm.cfg.vocab);
        goto out;
    }
    gen = malloc(sizeof(int32_t) * (size_t)(fl->samples * length));
    if (!gen) {
        st = ax_errorf(AX_ERR_NOMEM, "out of memory for the generations");
        goto out;
    }
    ax_generate_config gc = {.samples = (int)fl->samples,
                             .length = (int)length,
                             .batch = (int)fl->batch,
                             .temperature = fl->temperature,
                             .top_k = (int)fl->top_k,
                             .seed = (uint64_t)fl->seed,
                             .start_token = (int32_t)ax_axd_eot(ds)};
    double t0 = ax_now();
    AX_CHECK_GOTO(ax_generate(mm.model, &gc, gen), out);
    sum->decode_s = ax_now() - t0;
    if (ax_grid_rank(mm.grid) == 0) {
        AX_CHECK_GOTO(ax_ms_scan_out_open(&so, fl->out, fl->samples_out), out);
        AX_CHECK_GOTO(scan_all(fl, length, idx, gen, tok, &so, &sum->with_span,
                               &sum->mean_longest_span, &sum->max_longest_span,
                               sum->longest_span_hist),
                      out);
        AX_CHECK_GOTO(ax_memscan_index_check(idx), out);
        AX_CHECK_GOTO(write_scan(fl, length, &mm, idx, &dc, &so, sum), out);
        sum->data_is_training = dc.verdict;
        sum->samples = (long)fl->samples, sum->length = length;
        sum->n = ax_memscan_index_info(idx)->n;
    }
out:
    ax_ms_scan_out_close(&so);
    free(gen);
    ax_ms_model_close(&mm);
    ax_tokenizer_free(tok);
    ax_memscan_index_free(idx);
    ax_axd_free(ds);
    return st;
}

void ax_ms_generate_print(const ax_ms_generate_summary *s, FILE *f) {
    if (!s->written) return;
    fprintf(f,
            "generate: %ld generations of %ld tokens: %.1f%% contain a verbatim span of >= %u "
            "training tokens; longest %ld (mean %.1f); wrote %s and %s\n",
            s->samples, s->length, 100.0 * (double)s->with_span / (double)s->samples, s->n,
            s->max_longest_span, s->mean_longest_span, s->scan, s->samples_path);
    if (s->data_is_training == 0)
        fprintf(f,
                "generate: the index is not of the model's training data (--not-training-data; "
                "recorded in %s)\n",
                s->scan);
    if (s->decode_s > 0)
        fprintf(
            f, "generate: generated %ld tokens in %.2f s: %.0f tokens/s (model load excluded)\n",
            s->samples * s->length, s->decode_s, (double)(s->samples * s->length) / s->decode_s);
}
