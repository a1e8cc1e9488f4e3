/* `axmem memscan probe` as a library call (memscan/probe_run.h): the settings table, the run,
 * and the scan writer (probe.json in schema axmem-scan v1 + probe.samples.jsonl, published
 * together by memscan/scan_out.h). */
#include "memscan/probe_run.h"
#include "data/axd.h"
#include "data/tokenizer.h"
#include "goldfish/goldfish.h"
#include "lib/ckpt/ckpt.h"
#include "lib/core/json.h"
#include "lib/core/timer.h"
#include "lib/dist/comm.h"
#include "lib/dist/grid.h"
#include "index/index.h"
#include "lib/core/log.h"
#include "lib/dist/mpienv.h"
#include "memscan/model_load.h"
#include "memscan/probe.h"
#include "memscan/scan_inputs.h"

#include <math.h>
#include <omp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define F(field) offsetof(ax_ms_probe_opts, field)
static const ax_cfg_entry entries[] = {
    AX_CFG_CKPT_ENTRY(F),
    AX_CFG_DATA_ENTRY(F, "the training dataset (.axd) to draw prefixes from"),
    AX_CFG_TOKENIZER_ENTRY(F, "optional: adds decoded text to the samples file"),
    {"samples", AX_CFG_INT, F(samples), "256", 1, 1e8,
     "number of probes: distinct documents, at most one probe each (fewer documents that fit: "
     "each once, with a notice)"},
    {"repeat-docs", AX_CFG_BOOL, F(repeat_docs), "false", 1, 0,
     "let --samples exceed the documents that fit: they are probed again at other offsets "
     "(--offset random or deep), and intervals are clustered by document"},
    {"prefix", AX_CFG_INT, F(prefix), "32", 1, 1e5, "prompt length P in tokens"},
    {"suffix", AX_CFG_INT, F(suffix), "32", 1, 1e5, "greedy continuation length S in tokens"},
    {"offset", AX_CFG_CHOICE, F(offset), "start|random|deep", 1, 0,
     "where prefixes start in a document: its start, anywhere, or deep (at least prefix + suffix "
     "tokens in; documents of twice that only)"},
    {"prefix-lengths", AX_CFG_STR, F(prefix_lengths), "", 1, 0,
     "comma-separated prompt lengths probed in one run, e.g. 16,32,64 (replaces --prefix; "
     "metrics are the first length's, tables.by_prefix_length has one row per length)"},
    {"samples-per-prefix", AX_CFG_INT, F(samples_per_prefix), "0", 0, 1e6,
     "also draw N sampled continuations per probe (0: greedy only; --samples counts probes): "
     "per probe the draws reproducing the suffix, p_hat = matches / N; per scan the share with "
     "at least one match and (n,p)-discoverable extraction rates"},
    {"temperature", AX_CFG_FLOAT, F(temperature), "1", 1e-6, 1e6,
     "softmax temperature of the draws"},
    {"top-k", AX_CFG_INT, F(top_k), "0", 0, 1e9, "draws keep the k likeliest tokens (0: all)"},
    {"top-p", AX_CFG_FLOAT, F(top_p), "1", 1e-9, 1,
     "draws keep the smallest set of likeliest tokens holding mass p (1: all), after --top-k"},
    {"batch", AX_CFG_INT, F(batch), "32", 1, 1e6, "sequences decoded together per rank"},
    AX_CFG_SEED_ENTRY(F, "0", "picks documents and offsets, and keys the sampled draws"),
    AX_CFG_INDEX_ENTRY(
        F, "optional `memscan index` of --data: each sample's duplication count, and results per "
           "duplication bucket (memorization follows duplication)"),
    {"not-training-data", AX_CFG_BOOL, F(not_training_data), "false", 1, 0,
     "--data is knowingly not the model's training data (held-out data): no warning; the scan "
     "records data_is_training_data either way"},
    {"allow-other-tokenizer", AX_CFG_BOOL, F(allow_other_tokenizer), "false", 1, 0,
     "probe --data encoded by another tokenizer than the training data's (refused without it: "
     "its token ids are other text to the model)"},
    AX_MS_SCAN_RUN_ENTRIES(
        F, "probe.json",
        "per-sample results, mode 0600 (default: --out's name with .samples.jsonl for .json, e.g. "
        "probe.samples.jsonl)"),
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
               "at a document start are prompted with it too.\n"
               "With --samples-per-prefix N each probe is also continued N times by sampling\n"
               "(Gumbel-max over the sharded vocabulary, seeded: the same draws on any grid),\n"
               "giving the probability that at least one of N samples reproduces the suffix\n"
               "and (n,p)-discoverable extraction (Hayes et al. 2024). A checkpoint trained\n"
               "with hash goldfish gets a goldfish audit: which suffix positions the loss\n"
               "dropped and how often greedy decoding first diverges on one.\n"
               "Each probe is a distinct document (--repeat-docs allows more, with intervals\n"
               "clustered by document). --data is checked against the checkpoint's training\n"
               "data: another tokenizer's data is refused, other data warned about, and the\n"
               "scan records data_is_training_data.",
    .entries = entries,
    .n = (int)(sizeof entries / sizeof entries[0]),
};

static void ci_json(ax_jw *w, const char *key, double mean, double lo, double hi) {
    ax_jw_key(w, key);
    ax_jw_obj_begin(w);
    ax_jw_key(w, "mean"), ax_jw_num(w, mean);
    ax_ms_json_pair(w, "ci95", lo, hi);
    ax_jw_obj_end(w);
}

/* a mean and its bootstrap interval, written and returned; docs (NULL: independent probes)
 * clusters the probes by document: a cluster bootstrap */
static void stat_json(ax_jw *w, const char *key, const double *x, int n, const uint64_t *docs,
                      uint64_t seed, ax_ms_ci *ci) {
    if (docs)
        ax_bootstrap_ci_clustered(x, docs, n, 1000, seed, &ci->mean, &ci->lo, &ci->hi);
    else
        ax_bootstrap_ci(x, n, 1000, seed, &ci->mean, &ci->lo, &ci->hi);
    ci_json(w, key, ci->mean, ci->lo, ci->hi);
}

/* a rate of 0/1 outcomes: its exact (Clopper-Pearson) interval, not a bootstrap; with docs,
 * at the effective sample size of probes clustered by document (Korn-Graubard) */
static void rate_ci(const double *x, int n, const uint64_t *docs, double *mean, double *lo,
                    double *hi) {
    if (docs) {
        ax_clopper_pearson_clustered(x, docs, n, mean, lo, hi, NULL);
        return;
    }
    long k = 0;
    for (int i = 0; i < n; i++) k += x[i] != 0;
    *mean = n ? (double)k / n : 0.0;
    ax_clopper_pearson(k, n, lo, hi);
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* the document of each of r's probes (docs[r->n], for clustered intervals); returns how many
 * distinct ones, or -1 when out of memory */
static int probe_docs(const ax_probe_result *r, uint64_t *docs) {
    uint64_t *t = malloc(sizeof *t * (size_t)(r->n ? r->n : 1));
    if (!t) return -1;
    for (int i = 0; i < r->n; i++) docs[i] = t[i] = r->s[i].doc;
    qsort(t, (size_t)r->n, sizeof *t, cmp_u64);
    int distinct = 0;
    for (int i = 0; i < r->n; i++) distinct += i == 0 || t[i] != t[i - 1];
    free(t);
    return distinct;
}

/* one prefix length's exact-match interval (clustered by document when documents repeat) */
static ax_status length_rate_ci(const ax_probe_result *q, double *mean, double *lo, double *hi) {
    double *x = malloc(sizeof *x * (size_t)(q->n ? q->n : 1));
    uint64_t *docs = malloc(sizeof *docs * (size_t)(q->n ? q->n : 1));
    int n_docs = x && docs ? probe_docs(q, docs) : -1;
    if (n_docs < 0) {
        free(x), free(docs);
        return ax_errorf(AX_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < q->n; i++) x[i] = q->s[i].exact;
    rate_ci(x, q->n, n_docs < q->n ? docs : NULL, mean, lo, hi);
    free(x), free(docs);
    return AX_OK;
}

/* Every prefix length's results, and what the goldfish audit found. */
typedef struct {
    int n_len, lens[AX_MS_PROBE_MAX_LENGTHS];
    ax_probe_result res[AX_MS_PROBE_MAX_LENGTHS];
    uint8_t *dropped[AX_MS_PROBE_MAX_LENGTHS]; /* [n * S]: 1 where training dropped the target */
    char goldfish[AX_GOLDFISH_SPEC_MAX];       /* the audited spec ("" : no audit) */
    double decode_s;     /* wall time of the decoding (prefill and generation), all lengths */
    long tokens;         /* tokens generated: samples x suffix x (1 + draws) per length */
    ax_ms_train_data td; /* the checkpoint's training data, and --data against it */
    ax_ms_scan_data sd;
    int verdict; /* 1: --data is the training data, 0: not, -1: unknown */
} probe_set;

/* one samples line per probe; the fields after "generated_text" only with their feature */
static ax_status write_samples(const ax_ms_probe_opts *fl, const probe_set *ps,
                               const ax_tokenizer_t *tok, ax_ms_scan_out *so) {
    int S = (int)fl->suffix, D = (int)fl->samples_per_prefix;
    ax_status st = AX_OK;
    for (int l = 0; l < ps->n_len; l++) {
        const ax_probe_result *r = &ps->res[l];
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
            ax_ms_json_ids(&w, "truth", s->truth, (size_t)S);
            ax_ms_json_ids(&w, "generated", s->generated, (size_t)S);
            ax_ms_text_field(&w, "truth_text", tok, s->truth, (size_t)S);
            ax_ms_text_field(&w, "generated_text", tok, s->generated, (size_t)S);
            if (fl->prefix_lengths[0]) ax_jw_key(&w, "prefix"), ax_jw_int(&w, ps->lens[l]);
            if (D > 0) {
                ax_jw_key(&w, "sampled_exact"), ax_jw_int(&w, s->sampled_exact);
                ax_jw_key(&w, "p_hat"), ax_jw_num(&w, (double)s->sampled_exact / D);
            }
            if (ps->dropped[l]) { /* suffix offsets the training loss dropped */
                const uint8_t *dr = ps->dropped[l] + (size_t)i * S;
                ax_jw_key(&w, "goldfish_dropped");
                ax_jw_arr_begin(&w);
                for (int k = 0; k < S; k++)
                    if (dr[k]) ax_jw_int(&w, k);
                ax_jw_arr_end(&w);
                ax_jw_key(&w, "first_divergence");
                if (s->exact)
                    ax_jw_null(&w);
                else
                    ax_jw_int(&w, s->matched_prefix);
            }
            ax_jw_obj_end(&w);
            st = ax_ms_scan_out_line(so, &w);
            ax_jw_free(&w);
        }
    }
    return st;
}

/* (n,p)-discoverable extraction (Hayes et al. 2024): a probe whose per-draw extraction
 * probability is p_hat is extracted at least once in n draws with probability
 * 1 - (1 - p_hat)^n; the rate is the share of probes where that reaches the threshold */
static const int disc_n[] = {1, 10, 100, 1000};
static const double disc_p[] = {0.1, 0.5, 0.9};

static double discoverable(const ax_probe_result *r, int D, int n, double thr) {
    long hit = 0;
    for (int i = 0; i < r->n; i++) {
        double p = (double)r->s[i].sampled_exact / D;
        hit += 1.0 - pow(1.0 - p, n) >= thr;
    }
    return r->n ? (double)hit / r->n : 0.0;
}

/* the sampled-extraction numbers of one result: mean p_hat, share with a match in N draws */
static void sampled_rates(const ax_probe_result *r, int D, double *p_mean, long *any) {
    double t = 0;
    *any = 0;
    for (int i = 0; i < r->n; i++) {
        t += (double)r->s[i].sampled_exact / D;
        *any += r->s[i].sampled_exact > 0;
    }
    *p_mean = r->n ? t / r->n : 0.0;
}

/* the goldfish audit of the first length: first divergences on dropped positions */
static void goldfish_audit(const probe_set *ps, int S, ax_ms_probe_summary *sum) {
    const ax_probe_result *r = &ps->res[0];
    long div = 0, on = 0, dropped = 0;
    for (int i = 0; i < r->n; i++) {
        if (r->s[i].exact) continue;
        const uint8_t *dr = ps->dropped[0] + (size_t)i * S;
        div++;
        on += dr[r->s[i].matched_prefix];
        for (int k = 0; k < S; k++) dropped += dr[k];
    }
    sum->audited = 1;
    sum->diverged = div, sum->diverged_on_dropped = on;
    sum->dropped_fraction = div ? (double)dropped / ((double)div * S) : 0.0;
}

/* The samples first, then the scan JSON that records them; both published together. The
 * metrics and the tables other than by_prefix_length are the first prefix length's. */
static ax_status write_outputs(const ax_ms_probe_opts *fl, const ax_ckpt_t *ck, const ax_axd_t *ds,
                               const probe_set *ps, const ax_tokenizer_t *tok,
                               ax_ms_probe_summary *sum) {
    const ax_probe_result *r = &ps->res[0];
    int n = r->n, S = (int)fl->suffix, D = (int)fl->samples_per_prefix;
    double *ex = malloc(sizeof(double) * (size_t)n * 5 + 1), *acc = ex + n, *rl = ex + 2 * n,
           *ph = ex + 3 * n, *any_x = ex + 4 * n;
    long *hist = calloc((size_t)S + 1, sizeof(long));
    uint64_t *docs = malloc(sizeof *docs * (size_t)(n ? n : 1));
    int n_docs = docs ? probe_docs(r, docs) : -1;
    if (!ex || !hist || n_docs < 0) {
        free(ex), free(hist), free(docs);
        return ax_errorf(AX_ERR_NOMEM, "out of memory");
    }
    /* documents probed more than once (--repeat-docs): their probes are not independent */
    const uint64_t *cl = n_docs < n ? docs : NULL;
    double mp = 0;
    for (int i = 0; i < n; i++) {
        ex[i] = r->s[i].exact, acc[i] = r->s[i].token_accuracy, rl[i] = r->s[i].rouge_l;
        ph[i] = D > 0 ? (double)r->s[i].sampled_exact / D : 0.0;
        any_x[i] = r->s[i].sampled_exact > 0;
        mp += r->s[i].matched_prefix;
        hist[r->s[i].matched_prefix]++;
    }
    ax_ms_scan_out so;
    ax_status st = ax_ms_scan_out_open(&so, fl->out, fl->samples_out);
    if (st == AX_OK) st = write_samples(fl, ps, tok, &so);
    ax_jw w;
    ax_jw_init(&w);
    ax_ms_scan_header(&w, "extraction-probe", ck, fl->data, ax_axd_checksum(ds), ax_axd_n_docs(ds),
                      ax_axd_n_tokens(ds));
    ax_ms_scan_data_json(&w, &ps->td, &ps->sd, ps->verdict);
    ax_jw_key(&w, "config");
    ax_jw_obj_begin(&w);
    ax_jw_key(&w, "prefix"), ax_jw_int(&w, ps->lens[0]);
    ax_jw_key(&w, "suffix"), ax_jw_int(&w, fl->suffix);
    ax_jw_key(&w, "samples"), ax_jw_int(&w, n); /* the probes made */
    ax_jw_key(&w, "samples_requested"), ax_jw_int(&w, fl->samples);
    ax_jw_key(&w, "documents"), ax_jw_int(&w, n_docs); /* distinct documents probed */
    ax_jw_key(&w, "repeat_docs"), ax_jw_bool(&w, fl->repeat_docs);
    ax_jw_key(&w, "intervals"), ax_jw_str(&w, cl ? "clustered by document" : "independent probes");
    ax_jw_key(&w, "not_training_data"), ax_jw_bool(&w, fl->not_training_data);
    ax_jw_key(&w, "allow_other_tokenizer"), ax_jw_bool(&w, fl->allow_other_tokenizer);
    ax_jw_key(&w, "offset"), ax_jw_str(&w, fl->offset);
    ax_jw_key(&w, "prompt_eot"), ax_jw_bool(&w, r->lead_eot);
    ax_jw_key(&w, "seed"), ax_jw_int(&w, fl->seed);
    ax_jw_key(&w, "eligible_docs"), ax_jw_int(&w, r->eligible_docs);
    if (fl->prefix_lengths[0]) {
        ax_jw_key(&w, "prefix_lengths");
        ax_jw_arr_begin(&w);
        for (int l = 0; l < ps->n_len; l++) ax_jw_int(&w, ps->lens[l]);
        ax_jw_arr_end(&w);
    }
    if (D > 0) {
        ax_jw_key(&w, "samples_per_prefix"), ax_jw_int(&w, D);
        ax_jw_key(&w, "temperature"), ax_jw_num(&w, fl->temperature);
        ax_jw_key(&w, "top_k"), ax_jw_int(&w, fl->top_k);
        ax_jw_key(&w, "top_p"), ax_jw_num(&w, fl->top_p);
    }
    if (ps->goldfish[0]) ax_jw_key(&w, "goldfish"), ax_jw_str(&w, ps->goldfish);
    ax_jw_obj_end(&w);
    ax_jw_key(&w, "metrics");
    ax_jw_obj_begin(&w);
    ax_ms_ci *em = &sum->exact_match;
    rate_ci(ex, n, cl, &em->mean, &em->lo, &em->hi);
    ci_json(&w, "exact_match_rate", em->mean, em->lo, em->hi);
    stat_json(&w, "token_accuracy", acc, n, cl, (uint64_t)fl->seed + 2, &sum->token_accuracy);
    stat_json(&w, "rouge_l", rl, n, cl, (uint64_t)fl->seed + 3, &sum->rouge_l);
    sum->samples = n;
    sum->documents = n_docs;
    sum->clustered = cl != NULL;
    sum->data_is_training = ps->verdict;
    sum->prefix = ps->lens[0];
    sum->matched_prefix_mean = n ? mp / n : 0;
    ax_jw_key(&w, "matched_prefix_mean"), ax_jw_num(&w, sum->matched_prefix_mean);
    if (D > 0) {
        ax_ms_ci pc, ac;
        long any;
        sampled_rates(r, D, &sum->sampled_p_mean, &any);
        sum->draws = D;
        sum->sampled_any_rate = n ? (double)any / n : 0.0;
        /* p_hat's mean over probes: the per-draw extraction rate (bootstrap over probes) */
        stat_json(&w, "sampled_p_hat", ph, n, cl, (uint64_t)fl->seed + 4, &pc);
        /* the share of probes with at least one of the N draws exact: an unbiased estimate of
         * the mean probability that N draws extract the suffix (exact interval) */
        rate_ci(any_x, n, cl, &ac.mean, &ac.lo, &ac.hi);
        ci_json(&w, "sampled_any_match_rate", sum->sampled_any_rate, ac.lo, ac.hi);
    }
    if (ps->goldfish[0]) {
        goldfish_audit(ps, S, sum);
        ax_jw_key(&w, "goldfish_divergence");
        ax_jw_obj_begin(&w);
        ax_jw_key(&w, "diverged"), ax_jw_int(&w, sum->diverged);
        ax_jw_key(&w, "on_dropped"), ax_jw_int(&w, sum->diverged_on_dropped);
        ax_jw_key(&w, "share_on_dropped"),
            ax_jw_num(&w, sum->diverged ? (double)sum->diverged_on_dropped / sum->diverged : 0.0);
        ax_jw_key(&w, "dropped_fraction"), ax_jw_num(&w, sum->dropped_fraction);
        ax_jw_obj_end(&w);
    }
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
    if (D > 0) {
        ax_jw_key(&w, "discoverable");
        ax_jw_arr_begin(&w);
        for (size_t a = 0; a < sizeof disc_n / sizeof *disc_n; a++)
            for (size_t b = 0; b < sizeof disc_p / sizeof *disc_p; b++) {
                ax_jw_obj_begin(&w);
                ax_jw_key(&w, "n"), ax_jw_int(&w, disc_n[a]);
                ax_jw_key(&w, "p"), ax_jw_num(&w, disc_p[b]);
                ax_jw_key(&w, "rate"), ax_jw_num(&w, discoverable(r, D, disc_n[a], disc_p[b]));
                ax_jw_obj_end(&w);
            }
        ax_jw_arr_end(&w);
    }
    if (fl->prefix_lengths[0]) {
        ax_jw_key(&w, "by_prefix_length");
        ax_jw_arr_begin(&w);
        for (int l = 0; l < ps->n_len; l++) {
            const ax_probe_result *q = &ps->res[l];
            long k = 0;
            double ta = 0, mpl = 0, lo = 0, hi = 0, mean = 0;
            for (int i = 0; i < q->n; i++)
                k += q->s[i].exact, ta += q->s[i].token_accuracy, mpl += q->s[i].matched_prefix;
            if (st == AX_OK) st = length_rate_ci(q, &mean, &lo, &hi);
            ax_jw_obj_begin(&w);
            ax_jw_key(&w, "prefix"), ax_jw_int(&w, ps->lens[l]);
            ax_jw_key(&w, "samples"), ax_jw_int(&w, q->n);
            ax_jw_key(&w, "eligible_docs"), ax_jw_int(&w, q->eligible_docs);
            ax_jw_key(&w, "exact_match_rate"), ax_jw_num(&w, q->n ? (double)k / q->n : 0.0);
            sum->lengths[l] = ps->lens[l];
            sum->exact_by_length[l] = q->n ? (double)k / q->n : 0.0;
            sum->n_lengths = l + 1;
            ax_ms_json_pair(&w, "exact_match_ci95", lo, hi);
            ax_jw_key(&w, "token_accuracy"), ax_jw_num(&w, q->n ? ta / q->n : 0.0);
            ax_jw_key(&w, "matched_prefix_mean"), ax_jw_num(&w, q->n ? mpl / q->n : 0.0);
            if (D > 0) {
                double pm;
                long any;
                sampled_rates(q, D, &pm, &any);
                ax_jw_key(&w, "sampled_p_hat"), ax_jw_num(&w, pm);
                ax_jw_key(&w, "sampled_any_match_rate"),
                    ax_jw_num(&w, q->n ? (double)any / q->n : 0.0);
            }
            ax_jw_obj_end(&w);
        }
        ax_jw_arr_end(&w);
    }
    ax_jw_obj_end(&w);
    st = ax_ms_scan_out_finish(&so, &w, st, &sum->written, sum->scan, sum->samples_path);
    free(ex), free(hist), free(docs);
    return st;
}

/* duplicates of each probed window (the index's n tokens from the prefix start) */
static ax_status count_duplicates(const ax_ms_probe_opts *fl, const ax_axd_t *ds,
                                  ax_probe_result *r) {
    ax_memscan_index_t *idx = NULL;
    /* read in place: a few pages per probe, nothing loaded (damage met fails the scan) */
    AX_CHECK(ax_memscan_index_open(fl->index, ds, &idx));
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
    if (st == AX_OK) st = ax_memscan_index_check(idx);
    free(win);
    ax_memscan_index_free(idx);
    return st;
}

/* --prefix-lengths "16,32,64" into lens (or --prefix alone when empty) */
static ax_status parse_lengths(const ax_ms_probe_opts *fl, int *lens, int *n) {
    *n = 0;
    if (!fl->prefix_lengths[0]) {
        lens[(*n)++] = (int)fl->prefix;
        return AX_OK;
    }
    const char *p = fl->prefix_lengths;
    for (;;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 1 || v > 100000 || (*end && *end != ','))
            return ax_errorf(AX_ERR_ARG,
                             "--prefix-lengths '%s' is not a list of token counts in "
                             "[1, 100000]; write e.g. 16,32,64",
                             fl->prefix_lengths);
        for (int i = 0; i < *n; i++)
            if (lens[i] == v)
                return ax_errorf(AX_ERR_ARG, "--prefix-lengths '%s' lists %ld twice",
                                 fl->prefix_lengths, v);
        if (*n == AX_MS_PROBE_MAX_LENGTHS)
            return ax_errorf(AX_ERR_ARG, "--prefix-lengths '%s' has more than %d lengths",
                             fl->prefix_lengths, AX_MS_PROBE_MAX_LENGTHS);
        lens[(*n)++] = (int)v;
        if (!*end) return AX_OK;
        p = end + 1;
    }
}

/* How the audited run trained: its goldfish mask, packing and sequence length. */
typedef struct {
    ax_goldfish gf;
    int docs;   /* --packing doc: window = end-of-text + the document's first T tokens */
    uint64_t T; /* --seq-len */
} gf_run;

/* The training loss mask of each probe's suffix (goldfish/goldfish.h), for the target at
 * document position q = offset + P + k (with --packing doc, only q < T was ever a target:
 * later positions are never marked). hash: hashed from the h document tokens before it,
 * kept when q < h. static: dropped when (i + 1) % k == 0 for i its index among its window's
 * targets: q itself with --packing doc (window = end-of-text + document), and (t - 1) mod T
 * for packed windows [w T, w T + T] of the token stream, t = its index in the stream. */
static ax_status goldfish_drops(const gf_run *run, const ax_axd_t *ds, const ax_probe_result *r,
                                int P, int S, uint8_t *dropped) {
    const ax_goldfish *gf = &run->gf;
    const uint64_t *off = ax_axd_doc_offsets(ds);
    if (gf->strategy == AX_GOLDFISH_STATIC) {
        for (int i = 0; i < r->n; i++)
            for (int k = 0; k < S; k++) {
                uint64_t q = r->s[i].offset + (uint64_t)P + (uint64_t)k, t = off[r->s[i].doc] + q;
                uint64_t idx = run->docs ? q : (t - 1) % run->T;
                dropped[(size_t)i * S + k] = (!run->docs || q < run->T) && (idx + 1) % gf->k == 0;
            }
        return AX_OK;
    }
    int h = ax_goldfish_context(gf);
    int32_t *buf = malloc(sizeof(int32_t) * (size_t)(h + S));
    uint32_t *pos = malloc(sizeof(uint32_t) * (size_t)S);
    uint8_t *keep = malloc((size_t)S);
    if (!buf || !pos || !keep) {
        free(buf), free(pos), free(keep);
        return ax_errorf(AX_ERR_NOMEM, "out of memory for the goldfish audit");
    }
    for (int i = 0; i < r->n; i++) {
        const ax_probe_sample *s = &r->s[i];
        uint64_t q0 = s->offset + (uint64_t)P, have = q0 < (uint64_t)h ? q0 : (uint64_t)h;
        ax_axd_tokens(ds, off[s->doc] + q0 - have, have + (uint64_t)S, buf + h - have);
        for (int k = 0; k < S; k++) pos[k] = (uint32_t)(q0 + (uint64_t)k);
        ax_goldfish_mask(gf, buf + h, pos, S, keep);
        for (int k = 0; k < S; k++) /* a doc-packed run never trained past --seq-len */
            dropped[(size_t)i * S + k] = !keep[k] && (!run->docs || q0 + (uint64_t)k < run->T);
    }
    free(buf), free(pos), free(keep);
    return AX_OK;
}

/* --data against the checkpoint's training data (memscan/scan_inputs.h), before the model is
 * built: another tokenizer is refused, other data warned about and recorded */
static ax_status check_data(const ax_ms_probe_opts *fl, const ax_axd_t *ds, probe_set *ps) {
    ax_ckpt_t *ck = NULL;
    AX_CHECK(ax_ms_ckpt_open(fl->ckpt, &ck));
    ax_ms_scan_data *sd = &ps->sd;
    snprintf(sd->what, sizeof sd->what, "--data %s", fl->data);
    sd->cmd = "probe";
    sd->xxh3 = ax_axd_checksum(ds);
    sd->tokenizer = ax_axd_tokenizer_checksum(ds);
    sd->not_training_data = fl->not_training_data;
    sd->other_tokenizer = fl->allow_other_tokenizer;
    ax_status st = ax_ms_check_scan_data(ck, &ps->sd, &ps->td, &ps->verdict);
    ax_ckpt_free(ck);
    return st;
}

/* The probes of one prefix length: --samples, but each document at most once unless
 * --repeat-docs (a repeat is not an independent sample); fewer documents that fit give one probe
 * each, with a notice. With no document fitting, pick() says what to change. */
static int samples_for(const ax_ms_probe_opts *fl, const ax_axd_t *ds, const ax_probe_config *pc) {
    int ne = ax_probe_eligible(ds, pc);
    if (fl->repeat_docs || ne == 0 || fl->samples <= ne) return (int)fl->samples;
    if (ax_mpi_world_rank() == 0)
        AX_INFO("memscan probe: --samples %lld, but only %d documents of %s hold %s%d + %d "
                "tokens: probing each once (%d samples); --repeat-docs probes documents again "
                "(intervals then clustered by document)",
                (long long)fl->samples, ne, fl->data,
                pc->random_offset == AX_PROBE_DEEP ? "2 x " : "", pc->prefix, pc->suffix, ne);
    return ne;
}

ax_status ax_ms_probe_run(const ax_ms_probe_opts *fl, ax_ms_probe_summary *sum) {
    memset(sum, 0, sizeof *sum);
    ax_ms_model mm = {0};
    ax_axd_t *ds = NULL;
    ax_tokenizer_t *tok = NULL;
    probe_set ps;
    memset(&ps, 0, sizeof ps);
    ax_status st = AX_OK;
    if (!fl->ckpt[0] || !fl->data[0])
        return ax_errorf(AX_ERR_ARG,
                         "--ckpt and --data are required; see axmem memscan probe --help");
    if (strcmp(fl->offset, "start") && strcmp(fl->offset, "random") &&
        strcmp(fl->offset, "deep")) /* set in code: anything */
        return ax_errorf(AX_ERR_ARG, "--offset '%s' is not a choice; use start, random or deep",
                         fl->offset);
    AX_CHECK(parse_lengths(fl, ps.lens, &ps.n_len));
    ax_sample_params sp = {.temperature = fl->temperature,
                           .top_k = fl->top_k > 1e9 ? (int)1e9 : (int)fl->top_k,
                           .top_p = fl->top_p,
                           .seed = (uint64_t)fl->seed};
    if (fl->samples_per_prefix < 0 || fl->samples_per_prefix > 1000000)
        return ax_errorf(AX_ERR_ARG, "--samples-per-prefix %lld must be in [0, 1000000]",
                         (long long)fl->samples_per_prefix);
    if (fl->samples_per_prefix > 0) AX_CHECK(ax_sample_params_check(&sp));
    if (fl->repeat_docs && !strcmp(fl->offset, "start"))
        return ax_errorf(AX_ERR_ARG,
                         "--repeat-docs with --offset start would probe the same prefix again "
                         "(a document has one start); use --offset random or deep");
    int maxP = 0;
    for (int l = 0; l < ps.n_len; l++) maxP = ps.lens[l] > maxP ? ps.lens[l] : maxP;
    if (fl->threads > 0) omp_set_num_threads((int)fl->threads);
    AX_CHECK_GOTO(ax_axd_open(fl->data, 1, &ds), out);
    if (fl->tokenizer[0]) AX_CHECK_GOTO(ax_tokenizer_load(fl->tokenizer, &tok), out);
    if (tok) AX_CHECK_GOTO(ax_axd_check_tokenizer(ds, tok, fl->tokenizer), out);
    AX_CHECK_GOTO(check_data(fl, ds, &ps), out);
    AX_CHECK_GOTO(ax_comm_select(fl->comm), out);
    AX_CHECK_GOTO(ax_ms_model_open(fl->ckpt, fl->grid, AX_CFG_DEVICE_SPEC(fl), (int)fl->batch,
                                   (int)(maxP + fl->suffix), &mm),
                  out);
    /* --out's folder before the decoding (rank 0 writes; every rank learns the verdict) */
    st = ax_grid_rank(mm.grid) == 0 ? ax_ms_scan_out_prepare(fl->out, fl->samples_out) : AX_OK;
    AX_CHECK_GOTO(ax_coll_agree(mm.grid, AX_AXIS_WORLD, st, "memscan probe --out"), out);
    if (ax_axd_vocab_size(ds) > (uint32_t)mm.cfg.vocab) {
        st = ax_errorf(AX_ERR_MISMATCH,
                       "--data %s has vocabulary %u but the model %d; probe with "
                       "the dataset the model was trained on",
                       fl->data, ax_axd_vocab_size(ds), mm.cfg.vocab);
        goto out;
    }
    /* `--packing doc` training put end-of-text before every document: prompt the same way */
    const ax_json *tc = ax_ckpt_config(mm.ck);
    const char *packing = "packed", *gspec = "none";
    if (tc && ax_json_get(tc, "packing"))
        AX_CHECK_GOTO(ax_json_get_str(tc, "packing", ax_ckpt_path(mm.ck), &packing), out);
    /* a goldfish run: recompute its loss mask on the probed suffixes (goldfish_drops) */
    if (tc && ax_json_get(tc, "goldfish"))
        AX_CHECK_GOTO(ax_json_get_str(tc, "goldfish", ax_ckpt_path(mm.ck), &gspec), out);
    gf_run gr = {.docs = !strcmp(packing, "doc")};
    AX_CHECK_GOTO(ax_goldfish_parse(gspec, &gr.gf), out);
    if (gr.gf.strategy != AX_GOLDFISH_NONE) { /* the window layout needs --seq-len */
        double T = 0;
        if (tc && ax_json_get(tc, "seq-len"))
            AX_CHECK_GOTO(ax_json_get_num(tc, "seq-len", ax_ckpt_path(mm.ck), &T), out);
        gr.T = T >= 1 ? (uint64_t)T : 0;
        if (gr.T) ax_goldfish_format(&gr.gf, ps.goldfish, sizeof ps.goldfish);
    }
    for (int l = 0; l < ps.n_len; l++) {
        ax_probe_config pc = {.prefix = ps.lens[l],
                              .suffix = (int)fl->suffix,
                              .samples = (int)fl->samples,
                              .batch = (int)fl->batch,
                              .seed = (uint64_t)fl->seed,
                              .random_offset = !strcmp(fl->offset, "random") ? AX_PROBE_RANDOM
                                               : !strcmp(fl->offset, "deep") ? AX_PROBE_DEEP
                                                                             : AX_PROBE_START,
                              .lead_eot = !strcmp(packing, "doc"),
                              .draws = (int)fl->samples_per_prefix,
                              .sampling = sp,
                              .repeat = fl->repeat_docs};
        pc.samples = samples_for(fl, ds, &pc);
        double t0 = ax_now();
        AX_CHECK_GOTO(ax_probe_run(mm.model, ds, &pc, &ps.res[l]), out);
        ps.decode_s += ax_now() - t0;
        ps.tokens += (long)ps.res[l].n * fl->suffix * (1 + fl->samples_per_prefix);
        if (ax_grid_rank(mm.grid) != 0) continue;
        if (fl->index[0]) AX_CHECK_GOTO(count_duplicates(fl, ds, &ps.res[l]), out);
        if (ps.goldfish[0]) {
            ps.dropped[l] = malloc((size_t)ps.res[l].n * (size_t)fl->suffix + 1);
            if (!ps.dropped[l]) {
                st = ax_errorf(AX_ERR_NOMEM, "out of memory for the goldfish audit");
                goto out;
            }
            AX_CHECK_GOTO(
                goldfish_drops(&gr, ds, &ps.res[l], ps.lens[l], (int)fl->suffix, ps.dropped[l]),
                out);
        }
    }
    if (ax_grid_rank(mm.grid) == 0) st = write_outputs(fl, mm.ck, ds, &ps, tok, sum);
    sum->decode_s = ps.decode_s, sum->tokens = ps.tokens;
out:
    for (int l = 0; l < ps.n_len; l++) ax_probe_result_free(&ps.res[l]), free(ps.dropped[l]);
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
            s->samples, (long long)s->prefix, (long long)o->suffix, 100 * s->exact_match.mean,
            100 * s->exact_match.lo, 100 * s->exact_match.hi, s->token_accuracy.mean, s->scan,
            s->samples_path);
    if (s->clustered)
        fprintf(f,
                "probe: %d probes of %d documents (--repeat-docs): intervals clustered by "
                "document\n",
                s->samples, s->documents);
    if (s->data_is_training == 0)
        fprintf(f, "probe: --data %s is not the model's training data (recorded in %s)\n", o->data,
                s->scan);
    if (s->n_lengths > 0) {
        fprintf(f, "probe: exact match by prefix length:");
        for (int l = 0; l < s->n_lengths; l++)
            fprintf(f, "%s %d: %.1f%%", l ? "," : "", s->lengths[l], 100 * s->exact_by_length[l]);
        fprintf(f, "\n");
    }
    if (s->draws > 0)
        fprintf(f,
                "probe: sampled %d continuations per prefix: mean per-draw extraction %.2f%%, "
                "at least one of %d exact in %.1f%% of probes\n",
                s->draws, 100 * s->sampled_p_mean, s->draws, 100 * s->sampled_any_rate);
    if (s->decode_s > 0)
        fprintf(f, "probe: generated %ld tokens in %.2f s: %.0f tokens/s (model load excluded)\n",
                s->tokens, s->decode_s, (double)s->tokens / s->decode_s);
    if (s->audited)
        fprintf(f,
                "probe: goldfish audit: %ld of %ld first divergences on dropped positions "
                "(%.1f%%; %.1f%% of their suffix positions were dropped)\n",
                s->diverged_on_dropped, s->diverged,
                s->diverged ? 100.0 * (double)s->diverged_on_dropped / (double)s->diverged : 0.0,
                100 * s->dropped_fraction);
}
