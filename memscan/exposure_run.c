/* `axmem memscan exposure` as a library call (memscan/exposure_run.h): the settings table, the
 * run, and the scan writer (DIR/exposure.json in schema axmem-scan v1, no secrets, +
 * DIR/exposure.samples.jsonl, one line per canary with its secret, mode 0600; published together
 * by memscan/scan_out.h). */
#include "memscan/exposure_run.h"
#include "data/axd.h"
#include "data/tokenizer.h"
#include "lib/core/fsutil.h"
#include "lib/core/json.h"
#include "lib/core/log.h"
#include "lib/dist/grid.h"
#include "memscan/exposure.h"
#include "memscan/model_load.h"

#include <math.h>
#include <omp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AX_DS_PATH_MAX (2 * AX_MS_PATH_MAX + 2) /* a folder, '/', a relative path */

#define F(field) offsetof(ax_ms_exposure_opts, field)
static const ax_cfg_entry entries[] = {
    AX_CFG_CKPT_ENTRY(F),
    {"canaries", AX_CFG_STR, F(canaries), "", 1, 0,
     "the secrets file `axmem data canaries` wrote (required)"},
    AX_CFG_TOKENIZER_ENTRY(
        F, "tokenizer of the canaries (default: the one the secrets file names, beside it or from "
           "here)"),
    {"exact-max", AX_CFG_FLOAT, F(exact_max), "100000", 1, 1e7,
     "rank exactly among every string of the format when there are at most this many"},
    {"candidates", AX_CFG_INT, F(candidates), "0", 0, 1e7,
     "larger spaces: random candidates besides the file's references (1000 when it has none)"},
    {"batch", AX_CFG_INT, F(batch), "64", 1, 1e5, "sequences per forward per rank"},
    AX_CFG_SEED_ENTRY(F, "0", "draws the random candidates"),
    AX_MS_MODEL_ENTRIES(F),
    AX_CFG_THREADS_ENTRY(F),
    AX_CFG_OUT_ENTRY(F, "", "output folder: exposure.json and exposure.samples.jsonl (required)"),
};
#undef F

const ax_cfg_table ax_ms_exposure_table = {
    .usage = "axmem memscan exposure --ckpt DIR --canaries FILE.json --out DIR [flags]",
    .summary =
        "Canary exposure (Carlini et al. 2019): rank each planted secret among the strings of\n"
        "its format by the model's log-likelihood of the whole canary text (as planted, after\n"
        "end-of-text); rank = 1 + the candidates at least as likely (ties count against the\n"
        "secret), exposure = log2 |space| - log2 rank: exact by enumeration when the space is at\n"
        "most --exact-max, else estimated from a skew-normal fitted by maximum likelihood to\n"
        "never-planted candidates. Also whether greedy decoding from the prefix reproduces the\n"
        "secret. Table by repeat count. The samples file holds the secrets (mode 0600).",
    .entries = entries,
    .n = (int)(sizeof entries / sizeof entries[0]),
};

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static ax_status write_samples(const ax_canary_set *s, const ax_exposure_result *r,
                               const ax_exposure_reads *rd, const ax_tokenizer_t *tok,
                               ax_ms_scan_out *so) {
    ax_status st = AX_OK;
    for (int k = 0; st == AX_OK && k < s->n; k++) {
        const ax_canary *c = &s->c[k];
        const ax_exposure_row *e = &r->r[k];
        ax_jw w;
        ax_jw_init(&w);
        ax_jw_obj_begin(&w);
        ax_jw_key(&w, "id"), ax_jw_int(&w, c->id);
        ax_jw_key(&w, "repeats"), ax_jw_int(&w, c->repeats);
        ax_jw_key(&w, "trained_repeats"); /* planted copies training read; null: unknown */
        if (rd->known)
            ax_jw_int(&w, rd->read[k]);
        else
            ax_jw_null(&w);
        ax_jw_key(&w, "prefix"), ax_jw_str(&w, c->prefix);
        ax_jw_key(&w, "secret"), ax_jw_str(&w, c->secret);
        ax_jw_key(&w, "loglik"), ax_jw_num(&w, e->loglik);
        ax_jw_key(&w, "rank");
        if (r->exact)
            ax_jw_num(&w, e->rank);
        else
            ax_jw_null(&w);
        ax_jw_key(&w, "exposure"), ax_jw_num(&w, e->exposure);
        ax_jw_key(&w, "extracted"), ax_jw_bool(&w, e->extracted);
        ax_ms_json_ids(&w, "generated", e->generated, (size_t)e->n_generated);
        ax_ms_text_field(&w, "generated_text", tok, e->generated, (size_t)e->n_generated);
        ax_jw_obj_end(&w);
        st = ax_ms_scan_out_line(so, &w);
        ax_jw_free(&w);
    }
    return st;
}

/* "fits": per prefix, the skew-normal the estimate used (log-perplexities in nats) */
static void fits_json(ax_jw *w, const ax_exposure_result *r) {
    ax_jw_key(w, "fits");
    ax_jw_arr_begin(w);
    for (int g = 0; g < r->n_groups; g++) {
        const ax_exposure_group *eg = &r->g[g];
        ax_jw_obj_begin(w);
        ax_jw_key(w, "prefix"), ax_jw_str(w, eg->prefix);
        ax_jw_key(w, "candidates"), ax_jw_int(w, eg->candidates);
        ax_jw_key(w, "xi"), ax_jw_num(w, eg->fit.xi);
        ax_jw_key(w, "omega"), ax_jw_num(w, eg->fit.omega);
        ax_jw_key(w, "alpha"), ax_jw_num(w, eg->fit.alpha);
        ax_jw_obj_end(w);
    }
    ax_jw_arr_end(w);
}

/* one row of the table: the canaries with `repeats` repeats (-1: all) */
static void table_row(ax_jw *w, const ax_canary_set *s, const ax_exposure_result *r, int repeats,
                      double *buf, ax_ms_exposure_bucket *out) {
    int n = 0, ext = 0;
    double sum = 0;
    for (int k = 0; k < s->n; k++)
        if (repeats < 0 || s->c[k].repeats == repeats) {
            buf[n++] = r->r[k].exposure, sum += r->r[k].exposure, ext += r->r[k].extracted;
        }
    qsort(buf, (size_t)n, sizeof *buf, cmp_double);
    double med = n % 2 ? buf[n / 2] : 0.5 * (buf[n / 2 - 1] + buf[n / 2]);
    ax_jw_obj_begin(w);
    if (repeats >= 0) ax_jw_key(w, "repeats"), ax_jw_int(w, repeats);
    ax_jw_key(w, "canaries"), ax_jw_int(w, n);
    ax_jw_key(w, "exposure_mean"), ax_jw_num(w, sum / n);
    ax_jw_key(w, "exposure_median"), ax_jw_num(w, med);
    ax_jw_key(w, "exposure_min"), ax_jw_num(w, buf[0]);
    ax_jw_key(w, "exposure_max"), ax_jw_num(w, buf[n - 1]);
    ax_jw_key(w, "extracted"), ax_jw_int(w, ext);
    ax_jw_key(w, "extracted_share"), ax_jw_num(w, (double)ext / n);
    ax_jw_obj_end(w);
    *out = (ax_ms_exposure_bucket){repeats, n, ext, sum / n, med};
}

/* Where a file the secrets file names by `name` may be: as written when absolute, else beside
 * the secrets file, then from the working directory (the paths `data canaries` was given). */
static int places_of(const char *secrets, const char *name, char (*where)[AX_DS_PATH_MAX]) {
    int n = 0;
    const char *slash = strrchr(secrets, '/');
    if (name[0] != '/' && slash)
        snprintf(where[n++], AX_DS_PATH_MAX, "%.*s/%s", (int)(slash - secrets), secrets, name);
    snprintf(where[n++], AX_DS_PATH_MAX, "%s", name);
    return n;
}

/* The canaried dataset the secrets file names (places_of); one whose checksum is not the one
 * the secrets file records is passed over. *ds: the dataset opened (or NULL); path: where (or
 * the name as written); note: how it was found, or why not. */
static void find_dataset(const char *secrets, const ax_canary_set *s, ax_axd_t **ds, char *path,
                         size_t cap, char *note, size_t ncap) {
    *ds = NULL;
    snprintf(path, cap, "%s", s->dataset);
    if (!s->dataset[0]) {
        snprintf(note, ncap, "the secrets file names no dataset");
        return;
    }
    char where[2][AX_DS_PATH_MAX];
    int n = places_of(secrets, s->dataset, where);
    snprintf(note, ncap, "not found at %s%s%s", where[0], n > 1 ? " nor " : "",
             n > 1 ? where[1] : "");
    for (int i = 0; i < n; i++) {
        ax_axd_t *d = NULL;
        if (!ax_path_exists(where[i]) || ax_axd_open(where[i], AX_AXD_VERIFY, &d) != AX_OK) {
            ax_error_clear();
            continue;
        }
        if (s->has_identity && ax_axd_checksum(d) != s->dataset_xxh3) {
            snprintf(note, ncap, "%s has checksum 0x%016llx, not the canaried 0x%016llx", where[i],
                     (unsigned long long)ax_axd_checksum(d), (unsigned long long)s->dataset_xxh3);
            ax_axd_free(d);
            continue;
        }
        *ds = d;
        size_t len = strnlen(where[i], cap - 1);
        memcpy(path, where[i], len), path[len] = 0;
        snprintf(note, ncap, "opened%s",
                 s->has_identity ? "; its checksum is the secrets file's" : "");
        return;
    }
    if (s->has_identity) {
        size_t at = strlen(note);
        snprintf(note + at, ncap - at, "; checksum, documents and tokens from the secrets file");
    }
}

/* "training_reads": which planted copies the checkpoint's training read */
static void reads_json(ax_jw *w, const ax_exposure_reads *rd) {
    ax_jw_key(w, "training_reads");
    ax_jw_obj_begin(w);
    ax_jw_key(w, "known"), ax_jw_bool(w, rd->known);
    ax_jw_key(w, "note"), ax_jw_str(w, rd->why);
    if (rd->known) {
        ax_jw_key(w, "packing"), ax_jw_str(w, rd->packing);
        ax_jw_key(w, "seq_len"), ax_jw_int(w, rd->seq_len);
        ax_jw_key(w, "copies_planted"), ax_jw_int(w, rd->copies);
        ax_jw_key(w, "copies_read"), ax_jw_int(w, rd->copies_read);
        ax_jw_key(w, "canaries_short"), ax_jw_int(w, rd->canaries_short);
    }
    ax_jw_obj_end(w);
}

/* a warning when the table counts copies training never read, or cannot tell */
static void warn_reads(const ax_exposure_reads *rd, int canaries) {
    if (!rd->known)
        AX_WARN("memscan exposure: cannot tell which planted copies training read (%s); the "
                "table counts every planted copy as trained on",
                rd->why);
    else if (rd->canaries_short)
        AX_WARN("memscan exposure: training read %ld of the %ld planted copies (--packing %s "
                "--seq-len %lld); %d of %d canaries were trained on fewer copies than their "
                "repeat count, which the table still counts: see trained_repeats in "
                "exposure.samples.jsonl, and plant with `axmem data canaries --within %lld`%s",
                rd->copies_read, rd->copies, rd->packing, (long long)rd->seq_len,
                rd->canaries_short, canaries, (long long)rd->seq_len,
                strcmp(rd->packing, "doc") ? " (or --packing doc)" : "");
}

static ax_status write_outputs(const ax_ms_exposure_opts *fl, const ax_ms_model *mm,
                               const ax_canary_set *s, const ax_exposure_plan *p,
                               const ax_exposure_result *r, const ax_tokenizer_t *tok,
                               ax_ms_exposure_summary *sum) {
    char ds_path[AX_DS_PATH_MAX], note[3 * AX_DS_PATH_MAX];
    AX_CHECK(ax_mkdir_p(fl->out));
    /* the dataset block: the canaried dataset's identity, from the file or the secrets */
    ax_axd_t *ds = NULL;
    find_dataset(fl->canaries, s, &ds, ds_path, sizeof ds_path, note, sizeof note);
    uint64_t sum_ds = ds ? ax_axd_checksum(ds) : s->dataset_xxh3,
             docs = ds ? ax_axd_n_docs(ds) : s->dataset_docs,
             toks = ds ? ax_axd_n_tokens(ds) : s->dataset_tokens;
    ax_exposure_reads rd;
    ax_status rst = ax_exposure_reads_compute(s, ax_ckpt_config(mm->ck), ax_ckpt_state(mm->ck), ds,
                                              ds || s->has_identity, sum_ds, &rd);
    if (rst != AX_OK) {
        ax_axd_free(ds);
        return rst;
    }
    warn_reads(&rd, s->n);
    sum->reads_known = rd.known, sum->copies = rd.copies, sum->copies_read = rd.copies_read;
    sum->canaries_short = rd.canaries_short;
    int *reps = malloc(sizeof(int) * (size_t)s->n), nr = 0;
    double *buf = malloc(sizeof(double) * (size_t)s->n);
    if (!reps || !buf) {
        free(reps), free(buf), ax_axd_free(ds), ax_exposure_reads_free(&rd);
        return ax_errorf(AX_ERR_NOMEM, "out of memory");
    }
    for (int k = 0; k < s->n; k++) { /* distinct repeat counts, ascending */
        int v = s->c[k].repeats, at = 0;
        while (at < nr && reps[at] < v) at++;
        if (at < nr && reps[at] == v) continue;
        memmove(reps + at + 1, reps + at, sizeof(int) * (size_t)(nr - at));
        reps[at] = v, nr++;
    }
    ax_ms_scan_out so;
    ax_status st = ax_ms_scan_out_open_in(&so, fl->out, "exposure");
    if (st == AX_OK) st = write_samples(s, r, &rd, tok, &so);
    ax_jw w;
    ax_jw_init(&w);
    ax_ms_scan_header(&w, "canary-exposure", mm->ck, ds_path, sum_ds, docs, toks);
    ax_jw_key(&w, "dataset_found"), ax_jw_bool(&w, ds != NULL);
    ax_jw_key(&w, "dataset_identity"), ax_jw_str(&w, ds                ? "the dataset file"
                                                     : s->has_identity ? "the secrets file"
                                                                       : "unknown");
    ax_jw_key(&w, "dataset_note"), ax_jw_str(&w, note);
    reads_json(&w, &rd);
    ax_jw_key(&w, "config");
    ax_jw_obj_begin(&w);
    ax_jw_key(&w, "canaries_file"), ax_jw_str(&w, fl->canaries);
    ax_jw_key(&w, "format"), ax_jw_str(&w, s->format);
    ax_jw_key(&w, "space"), ax_jw_num(&w, r->space);
    ax_jw_key(&w, "method"), ax_jw_str(&w, r->exact ? "exact" : "estimate");
    ax_jw_key(&w, "estimator"), ax_jw_str(&w, r->exact ? "exact" : "skew-normal");
    ax_jw_key(&w, "candidates"), ax_jw_int(&w, r->n_candidates);
    ax_jw_key(&w, "sample_size"), ax_jw_int(&w, r->n_candidates);
    ax_jw_key(&w, "score");
    ax_jw_str(&w, "log-likelihood (nats) of every token of the canary text (lead + prefix + "
                  "candidate, tokenized as planted) after end-of-text: minus its log-perplexity");
    ax_jw_key(&w, "rank_definition");
    ax_jw_str(&w, r->exact ? "1 + the other strings of the space at least as likely (ties count "
                             "against the secret; Carlini et al. 2019)"
                           : "|space| x P(X <= the secret's log-perplexity), X skew-normal fitted "
                             "by maximum likelihood to the sampled candidates' log-perplexities, "
                             "clamped to [1, |space|] (Carlini et al. 2019, sec. 4.3)");
    ax_jw_key(&w, "lead"), ax_jw_str(&w, s->lead);
    ax_jw_key(&w, "exact_max"), ax_jw_num(&w, fl->exact_max);
    ax_jw_key(&w, "seed"), ax_jw_int(&w, fl->seed);
    ax_jw_key(&w, "grid"), ax_jw_str(&w, ax_grid_spec(mm->grid));
    ax_jw_key(&w, "positions"), ax_jw_int(&w, ax_exposure_plan_T(p));
    ax_jw_obj_end(&w);
    if (!r->exact) fits_json(&w, r);
    ax_jw_key(&w, "max_exposure"), ax_jw_num(&w, log2(r->space));
    ax_jw_key(&w, "overall");
    table_row(&w, s, r, -1, buf, &sum->overall);
    ax_jw_key(&w, "by_repeats");
    ax_jw_arr_begin(&w);
    ax_ms_exposure_bucket row;
    for (int i = 0; i < nr; i++) {
        table_row(&w, s, r, reps[i], buf, &row);
        if (i < AX_MS_EXPOSURE_ROWS) sum->by_repeats[sum->n_rows++] = row;
    }
    ax_jw_arr_end(&w);
    st = ax_ms_scan_out_finish(&so, &w, st, &sum->written, sum->scan, sum->samples_path);
    free(reps), free(buf);
    ax_axd_free(ds);
    ax_exposure_reads_free(&rd);
    return st;
}

ax_status ax_ms_exposure_run(const ax_ms_exposure_opts *fl, ax_ms_exposure_summary *sum) {
    ax_ms_model mm = {0};
    ax_canary_set cs = {0};
    ax_tokenizer_t *tok = NULL;
    ax_exposure_plan *plan = NULL;
    ax_exposure_result res = {0};
    ax_status st = AX_OK;
    memset(sum, 0, sizeof *sum);
    if (!fl->ckpt[0] || !fl->canaries[0] || !fl->out[0])
        return ax_errorf(AX_ERR_ARG, "--ckpt, --canaries and --out are required; see axmem "
                                     "memscan exposure --help");
    if (fl->threads > 0) omp_set_num_threads((int)fl->threads);
    AX_CHECK_GOTO(ax_canary_set_load(fl->canaries, &cs), out);
    const char *tp = fl->tokenizer[0] ? fl->tokenizer : cs.tokenizer;
    if (!tp[0]) {
        st = ax_errorf(AX_ERR_ARG, "%s names no tokenizer; pass --tokenizer", fl->canaries);
        goto out;
    }
    char where[2][AX_DS_PATH_MAX];
    if (!fl->tokenizer[0]) /* the secrets file's: beside it, else from here */
        for (int i = 0, n = places_of(fl->canaries, cs.tokenizer, where); i < n; i++)
            if (ax_path_exists(where[i]) || i == n - 1) {
                tp = where[i];
                break;
            }
    AX_CHECK_GOTO(ax_tokenizer_load(tp, &tok), out);
    ax_exposure_config c = {.exact_max = fl->exact_max,
                            .candidates = (int)fl->candidates,
                            .batch = (int)fl->batch,
                            .seed = (uint64_t)fl->seed,
                            .progress = 1};
    AX_CHECK_GOTO(ax_exposure_plan_build(&cs, tok, &c, &plan), out);
    int T = ax_exposure_plan_T(plan);
    if ((int64_t)c.batch * T > (1 << 28)) {
        st = ax_errorf(AX_ERR_ARG,
                       "--batch %d x %d positions per forward is too many; lower --batch", c.batch,
                       T);
        goto out;
    }
    AX_CHECK_GOTO(ax_ms_model_open(fl->ckpt, fl->grid, AX_CFG_DEVICE_SPEC(fl), c.batch * T, T, &mm),
                  out);
    if (ax_tokenizer_vocab_size(tok) > mm.cfg.vocab) {
        st = ax_errorf(AX_ERR_MISMATCH,
                       "the tokenizer %s has %d tokens but the model %s only %d; pass the "
                       "model's tokenizer",
                       tp, ax_tokenizer_vocab_size(tok), ax_ckpt_path(mm.ck), mm.cfg.vocab);
        goto out;
    }
    AX_CHECK_GOTO(ax_exposure_run(mm.model, &cs, plan, &c, &res), out);
    sum->canaries = cs.n, sum->exact = res.exact, sum->candidates = res.n_candidates;
    sum->space = res.space;
    snprintf(sum->format, sizeof sum->format, "%s", cs.format);
    if (ax_grid_rank(mm.grid) == 0) st = write_outputs(fl, &mm, &cs, plan, &res, tok, sum);
out:
    ax_exposure_result_free(&res);
    ax_exposure_plan_free(plan);
    ax_ms_model_close(&mm);
    ax_tokenizer_free(tok);
    ax_canary_set_free(&cs);
    return st;
}

void ax_ms_exposure_print(const ax_ms_exposure_summary *s, FILE *f) {
    if (!s->written) return;
    fprintf(f,
            "exposure: %d canaries, format '%s', %s over %ld candidates (max %.2f bits)\n"
            "  %8s %8s %10s %10s %10s\n",
            s->canaries, s->format, s->exact ? "exact rank" : "skew-normal estimate", s->candidates,
            log2(s->space), "repeats", "canaries", "mean bits", "median", "extracted");
    for (int i = 0; i < s->n_rows; i++) {
        const ax_ms_exposure_bucket *b = &s->by_repeats[i];
        fprintf(f, "  %8d %8d %10.2f %10.2f %9.1f%%\n", b->repeats, b->canaries, b->mean, b->median,
                100.0 * b->extracted / b->canaries);
    }
    if (!s->reads_known)
        fprintf(f, "  training reads of the planted copies unknown (see exposure.json)\n");
    else
        fprintf(f,
                "  training read %ld of %ld planted copies; %d canaries trained on fewer than "
                "their repeats\n",
                s->copies_read, s->copies, s->canaries_short);
    fprintf(f, "wrote %s and %s\n", s->scan, s->samples_path);
}
