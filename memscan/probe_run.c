/* `axmem memscan probe` as a library call (memscan/probe_run.h): the settings table, the run,
 * and the scan writer (probe.json in schema axmem-scan v1 + probe.samples.jsonl, published
 * together by memscan/scan_out.h). */
#include "memscan/probe_run.h"
#include "data/axd.h"
#include "data/tokenizer.h"
#include "lib/ckpt/ckpt.h"
#include "lib/core/json.h"
#include "lib/dist/grid.h"
#include "memscan/index.h"
#include "memscan/model_load.h"
#include "memscan/probe.h"

#include <omp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define F(field) offsetof(ax_ms_probe_opts, field)
static const ax_cfg_entry entries[] = {
    AX_CFG_CKPT_ENTRY(F),
    {"data", AX_CFG_STR, F(data), "", 1, 0, "the training dataset (.axd) to draw prefixes from"},
    {"tokenizer", AX_CFG_STR, F(tokenizer), "", 1, 0,
     "optional: adds decoded text to the samples file"},
    {"samples", AX_CFG_INT, F(samples), "256", 1, 1e8, "number of probes"},
    {"prefix", AX_CFG_INT, F(prefix), "32", 1, 1e5, "prompt length P in tokens"},
    {"suffix", AX_CFG_INT, F(suffix), "32", 1, 1e5, "greedy continuation length S in tokens"},
    {"offset", AX_CFG_CHOICE, F(offset), "start|random", 1, 0,
     "where prefixes start in a document"},
    {"batch", AX_CFG_INT, F(batch), "32", 1, 1e6, "sequences decoded together per rank"},
    AX_CFG_SEED_ENTRY(F, "0", "picks documents and offsets"),
    {"index", AX_CFG_STR, F(index), "", 1, 0,
     "optional `memscan index` of --data: each sample's duplication count, and results per "
     "duplication bucket (memorization follows duplication)"},
    AX_CFG_GRID_ENTRY(F, "process grid DxXxYxZ (launch with mpirun)"),
    AX_CFG_DEVICE_ENTRY(F, "where the model computes (cuda needs a build with scons cuda=yes)"),
    AX_CFG_THREADS_ENTRY(F),
    AX_CFG_OUT_ENTRY(F, "probe.json",
                     "results (schema axmem-scan v1); replaced together with the samples file"),
    {"samples-out", AX_CFG_STR, F(samples_out), "", 1, 0,
     "per-sample results, mode 0600 (default: --out's name with .samples.jsonl for .json, e.g. "
     "probe.samples.jsonl)"},
};
#undef F

const ax_cfg_table ax_ms_probe_table = {
    .usage = "axmem memscan probe --ckpt DIR --data FILE.axd [flags]",
    .summary = "Extractable memorization (Carlini et al.): prompt the model with a P-token prefix\n"
               "of a training document, greedy-decode S tokens (KV cache) and compare with the\n"
               "true continuation. Reports the exact-match rate, token accuracy (Pythia's score),\n"
               "matched-prefix length and RougeL, with 95% intervals (exact Clopper-Pearson for\n"
               "the exact-match rate, bootstrap for the means). A checkpoint\n"
               "trained with --packing doc saw end-of-text before every document, so prefixes\n"
               "at a document start are prompted with it too.",
    .entries = entries,
    .n = (int)(sizeof entries / sizeof entries[0]),
};

static void ci_json(ax_jw *w, const char *key, double mean, double lo, double hi) {
    ax_jw_key(w, key);
    ax_jw_obj_begin(w);
    ax_jw_key(w, "mean"), ax_jw_num(w, mean);
    ax_jw_key(w, "ci95");
    ax_jw_arr_begin(w);
    ax_jw_num(w, lo), ax_jw_num(w, hi);
    ax_jw_arr_end(w);
    ax_jw_obj_end(w);
}

/* a mean and its bootstrap interval, written and returned */
static void stat_json(ax_jw *w, const char *key, const double *x, int n, uint64_t seed,
                      ax_ms_ci *ci) {
    ax_bootstrap_ci(x, n, 1000, seed, &ci->mean, &ci->lo, &ci->hi);
    ci_json(w, key, ci->mean, ci->lo, ci->hi);
}

/* a rate of 0/1 outcomes: its exact (Clopper-Pearson) interval, not a bootstrap */
static void rate_ci(const double *x, int n, double *mean, double *lo, double *hi) {
    long k = 0;
    for (int i = 0; i < n; i++) k += x[i] != 0;
    *mean = n ? (double)k / n : 0.0;
    ax_clopper_pearson(k, n, lo, hi);
}

/* one samples line per probe */
static ax_status write_samples(const ax_ms_probe_opts *fl, const ax_probe_result *r,
                               const ax_tokenizer_t *tok, ax_ms_scan_out *so) {
    int S = (int)fl->suffix;
    ax_status st = AX_OK;
    for (int i = 0; st == AX_OK && i < r->n; i++) {
        const ax_probe_sample *s = &r->s[i];
        ax_jw w;
        ax_jw_init(&w);
        ax_jw_obj_begin(&w);
        ax_jw_key(&w, "i"), ax_jw_int(&w, i);
        ax_jw_key(&w, "doc"), ax_jw_uint(&w, s->doc);
        ax_jw_key(&w, "offset"), ax_jw_uint(&w, s->offset);
        ax_jw_key(&w, "exact"), ax_jw_bool(&w, s->exact);
        ax_jw_key(&w, "matched_prefix"), ax_jw_int(&w, s->matched_prefix);
        ax_jw_key(&w, "token_accuracy"), ax_jw_num(&w, s->token_accuracy);
        ax_jw_key(&w, "rouge_l"), ax_jw_num(&w, s->rouge_l);
        if (fl->index[0]) ax_jw_key(&w, "duplicates"), ax_jw_uint(&w, s->duplicates);
        ax_jw_key(&w, "truth");
        ax_jw_arr_begin(&w);
        for (int k = 0; k < S; k++) ax_jw_int(&w, s->truth[k]);
        ax_jw_arr_end(&w);
        ax_jw_key(&w, "generated");
        ax_jw_arr_begin(&w);
        for (int k = 0; k < S; k++) ax_jw_int(&w, s->generated[k]);
        ax_jw_arr_end(&w);
        ax_ms_text_field(&w, "truth_text", tok, s->truth, (size_t)S);
        ax_ms_text_field(&w, "generated_text", tok, s->generated, (size_t)S);
        ax_jw_obj_end(&w);
        st = ax_ms_scan_out_line(so, &w);
        ax_jw_free(&w);
    }
    return st;
}

/* The samples first, then the scan JSON that records them; both published together. */
static ax_status write_outputs(const ax_ms_probe_opts *fl, const ax_ckpt_t *ck, const ax_axd_t *ds,
                               const ax_probe_result *r, const ax_tokenizer_t *tok,
                               ax_ms_probe_summary *sum) {
    int n = r->n, S = (int)fl->suffix;
    double *ex = malloc(sizeof(double) * (size_t)n * 3), *acc = ex + n, *rl = ex + 2 * n;
    long *hist = calloc((size_t)S + 1, sizeof(long));
    if (!ex || !hist) {
        free(ex), free(hist);
        return ax_errorf(AX_ERR_NOMEM, "out of memory");
    }
    double mp = 0;
    for (int i = 0; i < n; i++) {
        ex[i] = r->s[i].exact, acc[i] = r->s[i].token_accuracy, rl[i] = r->s[i].rouge_l;
        mp += r->s[i].matched_prefix;
        hist[r->s[i].matched_prefix]++;
    }
    ax_ms_scan_out so;
    ax_status st = ax_ms_scan_out_open(&so, fl->out, fl->samples_out);
    if (st == AX_OK) st = write_samples(fl, r, tok, &so);
    ax_jw w;
    ax_jw_init(&w);
    ax_ms_scan_header(&w, "extraction-probe", ck, fl->data, ax_axd_checksum(ds), ax_axd_n_docs(ds),
                      ax_axd_n_tokens(ds));
    ax_jw_key(&w, "config");
    ax_jw_obj_begin(&w);
    ax_jw_key(&w, "prefix"), ax_jw_int(&w, fl->prefix);
    ax_jw_key(&w, "suffix"), ax_jw_int(&w, fl->suffix);
    ax_jw_key(&w, "samples"), ax_jw_int(&w, fl->samples);
    ax_jw_key(&w, "offset"), ax_jw_str(&w, fl->offset);
    ax_jw_key(&w, "prompt_eot"), ax_jw_bool(&w, r->lead_eot);
    ax_jw_key(&w, "seed"), ax_jw_int(&w, fl->seed);
    ax_jw_key(&w, "eligible_docs"), ax_jw_int(&w, r->eligible_docs);
    ax_jw_obj_end(&w);
    ax_jw_key(&w, "metrics");
    ax_jw_obj_begin(&w);
    ax_ms_ci *em = &sum->exact_match;
    rate_ci(ex, n, &em->mean, &em->lo, &em->hi);
    ci_json(&w, "exact_match_rate", em->mean, em->lo, em->hi);
    stat_json(&w, "token_accuracy", acc, n, (uint64_t)fl->seed + 2, &sum->token_accuracy);
    stat_json(&w, "rouge_l", rl, n, (uint64_t)fl->seed + 3, &sum->rouge_l);
    sum->samples = n;
    sum->matched_prefix_mean = n ? mp / n : 0;
    ax_jw_key(&w, "matched_prefix_mean"), ax_jw_num(&w, sum->matched_prefix_mean);
    ax_jw_obj_end(&w);
    ax_jw_key(&w, "tables");
    ax_jw_obj_begin(&w);
    if (fl->index[0]) { /* exact-match rate per duplication bucket of the probed window */
        ax_jw_key(&w, "by_duplication");
        ax_jw_arr_begin(&w);
        for (int b = 0; b < AX_MEMSCAN_HIST; b++) {
            long cnt = 0, hits = 0;
            for (int i = 0; i < n; i++)
                if (r->s[i].duplicates && ax_memscan_hist_bucket(r->s[i].duplicates) == b)
                    cnt++, hits += r->s[i].exact;
            ax_jw_obj_begin(&w);
            ax_jw_key(&w, "bucket"), ax_jw_str(&w, ax_memscan_hist_labels[b]);
            ax_jw_key(&w, "samples"), ax_jw_int(&w, cnt);
            ax_jw_key(&w, "exact_match_rate"),
                ax_jw_num(&w, cnt ? (double)hits / (double)cnt : 0.0);
            ax_jw_obj_end(&w);
        }
        ax_jw_arr_end(&w);
    }
    ax_jw_key(&w, "matched_prefix_hist");
    ax_jw_arr_begin(&w);
    for (int k = 0; k <= S; k++) ax_jw_int(&w, hist[k]);
    ax_jw_arr_end(&w);
    ax_jw_obj_end(&w);
    if (st == AX_OK) ax_ms_scan_out_record(&so, &w);
    ax_jw_obj_end(&w);
    if (st == AX_OK) st = ax_ms_scan_out_commit(&so, &w);
    ax_ms_scan_out_close(&so);
    ax_jw_free(&w);
    if (st == AX_OK) {
        sum->written = 1;
        snprintf(sum->scan, sizeof sum->scan, "%s", so.scan);
        snprintf(sum->samples_path, sizeof sum->samples_path, "%s", so.samples);
    }
    free(ex), free(hist);
    return st;
}

/* duplicates of each probed window (the index's n tokens from the prefix start) */
static ax_status count_duplicates(const ax_ms_probe_opts *fl, const ax_axd_t *ds,
                                  ax_probe_result *r) {
    ax_memscan_index_t *idx = NULL;
    AX_CHECK(ax_memscan_index_load(fl->index, ds, &idx));
    int n = (int)ax_memscan_index_info(idx)->n;
    int32_t *win = malloc(sizeof(int32_t) * (size_t)n);
    ax_status st = win ? AX_OK : ax_errorf(AX_ERR_NOMEM, "out of memory");
    const uint64_t *off = ax_axd_doc_offsets(ds);
    for (int i = 0; st == AX_OK && i < r->n; i++) {
        ax_probe_sample *s = &r->s[i];
        uint64_t start = off[s->doc] + s->offset, pos;
        s->duplicates = 0;
        if (start + (uint64_t)n > off[s->doc + 1] - 1) continue; /* window leaves the document */
        ax_axd_tokens(ds, start, (uint64_t)n, win);
        ax_memscan_index_lookup(idx, win, &s->duplicates, &pos);
    }
    free(win);
    ax_memscan_index_free(idx);
    return st;
}

ax_status ax_ms_probe_run(const ax_ms_probe_opts *fl, ax_ms_probe_summary *sum) {
    memset(sum, 0, sizeof *sum);
    ax_ms_model mm = {0};
    ax_axd_t *ds = NULL;
    ax_tokenizer_t *tok = NULL;
    ax_probe_result res = {0};
    ax_status st = AX_OK;
    if (!fl->ckpt[0] || !fl->data[0])
        return ax_errorf(AX_ERR_ARG,
                         "--ckpt and --data are required; see axmem memscan probe --help");
    if (strcmp(fl->offset, "start") && strcmp(fl->offset, "random")) /* set in code: anything */
        return ax_errorf(AX_ERR_ARG, "--offset '%s' is not a choice; use start or random",
                         fl->offset);
    if (fl->threads > 0) omp_set_num_threads((int)fl->threads);
    AX_CHECK_GOTO(ax_axd_open(fl->data, 1, &ds), out);
    if (fl->tokenizer[0]) AX_CHECK_GOTO(ax_tokenizer_load(fl->tokenizer, &tok), out);
    if (tok) AX_CHECK_GOTO(ax_axd_check_tokenizer(ds, tok, fl->tokenizer), out);
    AX_CHECK_GOTO(ax_ms_model_open(fl->ckpt, fl->grid, fl->device, (int)fl->batch,
                                   (int)(fl->prefix + fl->suffix), &mm),
                  out);
    if (ax_axd_vocab_size(ds) > (uint32_t)mm.cfg.vocab) {
        st = ax_errorf(AX_ERR_MISMATCH,
                       "--data %s has vocabulary %u but the model %d; probe with "
                       "the dataset the model was trained on",
                       fl->data, ax_axd_vocab_size(ds), mm.cfg.vocab);
        goto out;
    }
    /* `--packing doc` training put end-of-text before every document: prompt the same way */
    const ax_json *tc = ax_ckpt_config(mm.ck);
    const char *packing = "packed";
    if (tc && ax_json_get(tc, "packing"))
        AX_CHECK_GOTO(ax_json_get_str(tc, "packing", ax_ckpt_path(mm.ck), &packing), out);
    ax_probe_config pc = {.prefix = (int)fl->prefix,
                          .suffix = (int)fl->suffix,
                          .samples = (int)fl->samples,
                          .batch = (int)fl->batch,
                          .seed = (uint64_t)fl->seed,
                          .random_offset = !strcmp(fl->offset, "random"),
                          .lead_eot = !strcmp(packing, "doc")};
    AX_CHECK_GOTO(ax_probe_run(mm.model, ds, &pc, &res), out);
    if (fl->index[0] && ax_grid_rank(mm.grid) == 0)
        AX_CHECK_GOTO(count_duplicates(fl, ds, &res), out);
    if (ax_grid_rank(mm.grid) == 0) st = write_outputs(fl, mm.ck, ds, &res, tok, sum);
out:
    ax_probe_result_free(&res);
    ax_ms_model_close(&mm);
    ax_tokenizer_free(tok);
    ax_axd_free(ds);
    return st;
}

void ax_ms_probe_print(const ax_ms_probe_opts *o, const ax_ms_probe_summary *s, FILE *f) {
    if (!s->written) return;
    fprintf(f,
            "probe: %d samples, prefix %lld, suffix %lld: exact match %.1f%% (95%% CI "
            "%.1f-%.1f%%), token accuracy %.3f; wrote %s and %s\n",
            s->samples, (long long)o->prefix, (long long)o->suffix, 100 * s->exact_match.mean,
            100 * s->exact_match.lo, 100 * s->exact_match.hi, s->token_accuracy.mean, s->scan,
            s->samples_path);
}
