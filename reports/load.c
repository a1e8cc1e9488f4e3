/* Reads scan files (probe.json, regurgitation.json, the older scan.json; schema axmem-scan
 * v1), the samples file each one records, metrics.jsonl and the memscan index sidecar into an
 * ax_report. Every value is checked against its domain (check.c) and every failure names the
 * file. JSONL files are streamed line by line: training logs of long runs are large. */
#include "lib/core/fsutil.h"
#include "lib/core/json.h"
#include "reports/model.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INDEX_SCHEMA "axmem.memscan.index/"
#define CURVE_SCHEMA "axmem-curve"

/* a rate with its interval: metrics.KEY in [0, 1] */
static ax_status get_rate(const ax_json *metrics, const char *key, const char *path,
                          ax_rep_stat *s) {
    char field[96];
    snprintf(field, sizeof field, "metrics.%s", key);
    AX_CHECK(ax_rep_get_stat(metrics, key, path, s));
    return ax_rep_check_stat(s, 0, 1, path, field);
}

static ax_status parse_probe(const ax_json *v, const char *path, ax_rep_probe *p) {
    const ax_json *cfg, *m, *tables = ax_json_get(v, "tables"), *h = NULL, *d = NULL;
    AX_CHECK(ax_rep_get_obj(v, "config", path, &cfg));
    AX_CHECK(ax_rep_get_obj(v, "metrics", path, &m));
    if (tables && tables->type != AX_JSON_OBJ)
        return ax_errorf(AX_ERR_CORRUPT, "%s: tables is not an object", path);
    AX_CHECK(ax_rep_get_int(cfg, "config", "prefix", 1, AX_REP_MAX_TOKENS, path, &p->prefix));
    AX_CHECK(ax_rep_get_int(cfg, "config", "suffix", 1, AX_REP_MAX_TOKENS, path, &p->suffix));
    int64_t samples;
    AX_CHECK(ax_rep_opt_int(cfg, "config", "samples", 0, AX_REP_MAX_COUNT, -1, path, &samples));
    AX_CHECK(get_rate(m, "exact_match_rate", path, &p->exact));
    AX_CHECK(get_rate(m, "token_accuracy", path, &p->tok_acc));
    AX_CHECK(get_rate(m, "rouge_l", path, &p->rouge_l));
    AX_CHECK(ax_rep_get_in(m, "metrics", "matched_prefix_mean", 0, (double)p->suffix, path,
                           &p->mp_mean));
    AX_CHECK(ax_rep_opt_typed(tables, "matched_prefix_hist", AX_JSON_ARR, path,
                              "tables.matched_prefix_hist", &h));
    AX_CHECK(
        ax_rep_opt_typed(tables, "by_duplication", AX_JSON_ARR, path, "tables.by_duplication", &d));
    if (h) { /* probes by matched-prefix length 0..S: the counts behind every rate */
        if (h->n != (size_t)p->suffix + 1)
            return ax_errorf(AX_ERR_CORRUPT,
                             "%s: tables.matched_prefix_hist has %zu entries, expected suffix + 1 "
                             "= %lld; the file was edited or damaged: rerun memscan probe",
                             path, h->n, (long long)p->suffix + 1);
        p->mp_hist = calloc(h->n, sizeof(int64_t));
        if (!p->mp_hist) return ax_rep_nomem();
        p->n_mp_hist = (int)h->n;
        for (size_t k = 0; k < h->n; k++) {
            char field[64];
            snprintf(field, sizeof field, "tables.matched_prefix_hist[%zu]", k);
            AX_CHECK(ax_rep_check_int(h->items[k], 0, AX_REP_MAX_COUNT - p->n, path, field,
                                      &p->mp_hist[k]));
            p->n += p->mp_hist[k];
        }
        p->n_exact = p->mp_hist[h->n - 1]; /* matched all suffix tokens = exact match */
        if (samples >= 0 && p->n != samples)
            return ax_errorf(AX_ERR_CORRUPT,
                             "%s: tables.matched_prefix_hist counts %lld probes but "
                             "config.samples is %lld; the file was edited or damaged: rerun "
                             "memscan probe",
                             path, (long long)p->n, (long long)samples);
        if (fabs(p->exact.mean * (double)p->n - (double)p->n_exact) > 0.5)
            return ax_errorf(AX_ERR_CORRUPT,
                             "%s: metrics.exact_match_rate.mean = %g disagrees with "
                             "tables.matched_prefix_hist (%lld of %lld probes exact); the file "
                             "was edited or damaged: rerun memscan probe",
                             path, p->exact.mean, (long long)p->n_exact, (long long)p->n);
    } else { /* no histogram: the rate times the probes */
        if (samples < 0)
            return ax_errorf(AX_ERR_CORRUPT,
                             "%s: neither tables.matched_prefix_hist nor config.samples says how "
                             "many documents were probed; rerun memscan probe",
                             path);
        p->n = samples;
        p->n_exact = (int64_t)llround(p->exact.mean * (double)p->n); /* mean is in [0, 1] */
    }
    const ax_json *gd = ax_json_get(m, "goldfish_divergence");
    if (gd) { /* the goldfish audit */
        const char *sec = "metrics.goldfish_divergence";
        p->audited = 1;
        AX_CHECK(ax_rep_get_int(gd, sec, "diverged", 0, p->n, path, &p->diverged));
        AX_CHECK(ax_rep_get_int(gd, sec, "on_dropped", 0, p->diverged, path, &p->on_dropped));
        AX_CHECK(ax_rep_get_in(gd, sec, "dropped_fraction", 0, 1, path, &p->dropped_fraction));
    }
    if (d && d->n) {
        p->dup = calloc(d->n, sizeof *p->dup);
        if (!p->dup) return ax_rep_nomem();
        p->n_dup = (int)d->n;
        int64_t total = 0;
        for (size_t k = 0; k < d->n; k++) {
            const char *b;
            char sec[64];
            snprintf(sec, sizeof sec, "tables.by_duplication[%zu]", k);
            AX_CHECK(ax_json_get_str(d->items[k], "bucket", path, &b));
            AX_CHECK(
                ax_rep_get_int(d->items[k], sec, "samples", 0, p->n, path, &p->dup[k].samples));
            AX_CHECK(ax_rep_get_in(d->items[k], sec, "exact_match_rate", 0, 1, path,
                                   &p->dup[k].exact_match_rate));
            if (!(p->dup[k].bucket = strdup(b))) return ax_rep_nomem();
            total += p->dup[k].samples;
        }
        AX_CHECK(ax_rep_check_le(total, "the sum of tables.by_duplication[].samples", p->n,
                                 "the probes counted", path));
    }
    return AX_OK;
}

static ax_status parse_regurg(const ax_json *v, const char *path, ax_rep_regurg *g) {
    const ax_json *cfg, *m, *tables = ax_json_get(v, "tables"), *h = NULL;
    AX_CHECK(ax_rep_get_obj(v, "config", path, &cfg));
    AX_CHECK(ax_rep_get_obj(v, "metrics", path, &m));
    if (tables && tables->type != AX_JSON_OBJ)
        return ax_errorf(AX_ERR_CORRUPT, "%s: tables is not an object", path);
    AX_CHECK(ax_rep_get_int(cfg, "config", "n", 1, AX_REP_MAX_TOKENS, path, &g->n));
    AX_CHECK(ax_rep_get_int(cfg, "config", "samples", 0, AX_REP_MAX_COUNT, path, &g->samples));
    AX_CHECK(ax_rep_get_int(cfg, "config", "length", 1, AX_REP_MAX_TOKENS, path, &g->length));
    AX_CHECK(ax_rep_get_in(m, "metrics", "frac_with_verbatim_span", 0, 1, path, &g->frac_span));
    AX_CHECK(ax_rep_get_in(m, "metrics", "mean_longest_span", 0, (double)g->length, path,
                           &g->mean_span));
    AX_CHECK(ax_rep_get_int(m, "metrics", "max_longest_span", 0, g->length, path, &g->max_span));
    if (g->mean_span > (double)g->max_span + 1e-9)
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: metrics.mean_longest_span = %g exceeds metrics.max_longest_span = "
                         "%lld; the file was edited or damaged: rerun memscan generate",
                         path, g->mean_span, (long long)g->max_span);
    AX_CHECK(ax_rep_opt_typed(tables, "longest_span_hist", AX_JSON_OBJ, path,
                              "tables.longest_span_hist", &h));
    if (h && h->n) {
        g->hist_labels = calloc(h->n, sizeof(char *));
        g->hist = calloc(h->n, sizeof(int64_t));
        if (!g->hist_labels || !g->hist) return ax_rep_nomem();
        g->n_hist = (int)h->n;
        int64_t total = 0;
        for (size_t k = 0; k < h->n; k++) {
            char field[160];
            snprintf(field, sizeof field, "tables.longest_span_hist.%.100s", h->keys[k]);
            AX_CHECK(ax_rep_check_int(h->items[k], 0, g->samples, path, field, &g->hist[k]));
            if (!(g->hist_labels[k] = strdup(h->keys[k]))) return ax_rep_nomem();
            total += g->hist[k];
        }
        if (total != g->samples)
            return ax_errorf(AX_ERR_CORRUPT,
                             "%s: tables.longest_span_hist counts %lld generations but "
                             "config.samples is %lld; the file was edited or damaged: rerun "
                             "memscan generate",
                             path, (long long)total, (long long)g->samples);
    }
    int64_t hit, total;
    ax_rep_regurg_counts(g, &hit, &total);
    if (fabs(g->frac_span * (double)total - (double)hit) > 0.5)
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: metrics.frac_with_verbatim_span = %g disagrees with "
                         "tables.longest_span_hist (%lld of %lld generations); the file was "
                         "edited or damaged: rerun memscan generate",
                         path, g->frac_span, (long long)hit, (long long)total);
    return AX_OK;
}

/* 1 if a ranks above b among memorized samples: longer matched prefix, then exact, then
 * higher token accuracy */
static int ranks_above(const ax_rep_sample *a, const ax_rep_sample *b) {
    if (a->matched_prefix != b->matched_prefix) return a->matched_prefix > b->matched_prefix;
    if (a->exact != b->exact) return a->exact > b->exact;
    return a->token_accuracy > b->token_accuracy;
}

static void sample_free(ax_rep_sample *s) {
    free(s->truth_text), free(s->generated_text);
}

static const char *opt_text(const ax_json *o, const char *key) {
    const ax_json *v = ax_json_get(o, key);
    return v && v->type == AX_JSON_STR ? v->str : NULL;
}

typedef struct {
    ax_rep_probe *p;
    const char *scan; /* the scan JSON, for messages */
    int keep_text;    /* 0: decoded text is not even loaded (a redacted report) */
} sample_ctx;

/* one probe samples row into the top-N list (kept sorted, best first) */
static ax_status take_sample(const ax_json *row, const char *what, const sample_ctx *c) {
    ax_rep_probe *p = c->p;
    ax_rep_sample s = {0};
    double acc = 0;
    const ax_json *ex = ax_json_get(row, "exact");
    if (!ax_json_get(row, "doc") && (ax_json_get(row, "spans") || ax_json_get(row, "longest_span")))
        return ax_errorf(AX_ERR_MISMATCH,
                         "%s: a regurgitation-scan row (memscan generate wrote this file), not a "
                         "probe sample of %s; rerun memscan probe (its samples now have their "
                         "own name)",
                         what, c->scan);
    AX_CHECK(ax_rep_get_int(row, "", "doc", 0, p->id.ds_docs - 1, what, &s.doc));
    AX_CHECK(ax_rep_get_int(row, "", "offset", 0, p->id.ds_tokens, what, &s.offset));
    AX_CHECK(ax_rep_get_int(row, "", "matched_prefix", 0, p->suffix, what, &s.matched_prefix));
    if (ax_json_get(row, "token_accuracy"))
        AX_CHECK(ax_rep_get_in(row, "", "token_accuracy", 0, 1, what, &acc));
    s.token_accuracy = acc;
    s.exact = ex && ex->type == AX_JSON_BOOL && ex->num != 0;
    int pos = p->n_top;
    while (pos > 0 && ranks_above(&s, &p->top[pos - 1])) pos--;
    if (pos >= AX_REP_TOP) return AX_OK;
    const char *tt = c->keep_text ? opt_text(row, "truth_text") : NULL,
               *gt = c->keep_text ? opt_text(row, "generated_text") : NULL;
    if ((tt && !(s.truth_text = strdup(tt))) || (gt && !(s.generated_text = strdup(gt)))) {
        sample_free(&s);
        return ax_rep_nomem();
    }
    if (p->n_top == AX_REP_TOP)
        sample_free(&p->top[AX_REP_TOP - 1]);
    else
        p->n_top++;
    memmove(&p->top[pos + 1], &p->top[pos], sizeof s * (size_t)(p->n_top - 1 - pos));
    p->top[pos] = s;
    return AX_OK;
}

static ax_status sample_line(const ax_json *row, const char *what, void *ctx) {
    sample_ctx *c = ctx;
    c->p->n_sample_rows++;
    return take_sample(row, what, c);
}

/* reads p->samples_file: the top samples, and one row per probe */
static ax_status read_probe_samples(ax_rep_probe *p, int keep_text) {
    sample_ctx c = {p, p->file, keep_text};
    AX_CHECK(ax_rep_each_jsonl(p->samples_file, sample_line, &c));
    if (p->n_sample_rows != p->n)
        return ax_errorf(AX_ERR_MISMATCH,
                         "%s has %lld samples but %s probed %lld documents: they do not belong "
                         "together; rerun memscan probe",
                         p->samples_file, (long long)p->n_sample_rows, p->file, (long long)p->n);
    return AX_OK;
}

static ax_status push2(double **a, double **b, int64_t *n, int64_t *cap, double x, double y) {
    if (*n == *cap) {
        int64_t c = *cap ? *cap * 2 : 256;
        double *na = realloc(*a, sizeof(double) * (size_t)c);
        if (!na) return ax_rep_nomem();
        *a = na;
        double *nb = realloc(*b, sizeof(double) * (size_t)c);
        if (!nb) return ax_rep_nomem();
        *b = nb, *cap = c;
    }
    (*a)[*n] = x, (*b)[*n] = y, (*n)++;
    return AX_OK;
}

static ax_status metrics_line(const ax_json *row, const char *what, void *ctx) {
    ax_rep_run *run = ctx;
    ax_rep_train *t = run->train;
    double step, loss;
    if (ax_json_get(row, "scan")) /* a scan record of train --scan-every: extraction vs step */
        return ax_rep_scan_record(row, what, t->file, run);
    AX_CHECK(ax_rep_get_in(row, "", "step", 0, (double)AX_REP_MAX_COUNT, what, &step));
    AX_CHECK(ax_rep_get_in(row, "", "loss", -DBL_MAX, DBL_MAX, what, &loss));
    AX_CHECK(push2(&t->step, &t->loss, &t->n, &t->cap, step, loss));
    const ax_json *vl = ax_json_get(row, "val_loss");
    if (vl && vl->type == AX_JSON_NUM) {
        AX_CHECK(ax_rep_check_num(vl->num, -DBL_MAX, DBL_MAX, what, "val_loss"));
        AX_CHECK(push2(&t->val_step, &t->val_loss, &t->n_val, &t->cap_val, step, vl->num));
    }
    return AX_OK;
}

static ax_rep_run *find_run(ax_report *r, const char *label) {
    for (int i = 0; i < r->n_runs; i++)
        if (!strcmp(r->runs[i].label, label)) return &r->runs[i];
    return NULL;
}

static int same_ident(const ax_rep_ident *a, const ax_rep_ident *b) {
    return !strcmp(a->ckpt_path, b->ckpt_path) && !strcmp(a->ds_xxh3, b->ds_xxh3);
}

enum { KIND_PROBE, KIND_REGURG, KIND_MIA, KIND_EXPOSURE, N_KINDS };
static const char *const kind_names[N_KINDS] = {"extraction-probe", "regurgitation-scan",
                                                "membership-inference", "canary-exposure"};

/* keep: what sample text to load (KEEP_TEXT: training text; KEEP_SECRETS: canary secrets) */
enum { KEEP_TEXT = 1, KEEP_SECRETS = 2 };

static const char *scan_file(const ax_rep_run *run, int kind) {
    switch (kind) {
    case KIND_PROBE:
        return run->probe ? run->probe->file : NULL;
    case KIND_REGURG:
        return run->regurg ? run->regurg->file : NULL;
    case KIND_MIA:
        return run->mia ? run->mia->file : NULL;
    default:
        return run->exposure ? run->exposure->file : NULL;
    }
}

/* the scan's samples file, checked against its record; *out NULL when it records none */
static ax_status verified_samples(const ax_json *v, const char *path, char **out, int64_t *lines) {
    ax_rep_samples_rec rec = {0};
    ax_status st = ax_rep_samples_rec_read(v, path, &rec);
    if (st == AX_OK && rec.path) st = ax_rep_samples_rec_verify(&rec, path);
    if (st == AX_OK) *out = rec.path, rec.path = NULL;
    if (lines) *lines = rec.lines;
    free(rec.path);
    return st;
}

/* The one parsed scan v (its header read into id, moved into the run) by kind. */
static ax_status load_kind(ax_rep_run *run, const ax_json *v, const char *path, int kind,
                           ax_rep_ident *id, int keep) {
    switch (kind) {
    case KIND_PROBE: {
        ax_rep_probe *p = calloc(1, sizeof *p);
        if (!p || !(p->file = strdup(path))) return free(p), ax_rep_nomem();
        run->probe = p, p->id = *id, memset(id, 0, sizeof *id);
        AX_CHECK(parse_probe(v, path, p));
        AX_CHECK(verified_samples(v, path, &p->samples_file, NULL));
        return p->samples_file ? read_probe_samples(p, keep & KEEP_TEXT) : AX_OK;
    }
    case KIND_REGURG: {
        ax_rep_regurg *g = calloc(1, sizeof *g);
        if (!g || !(g->file = strdup(path))) return free(g), ax_rep_nomem();
        run->regurg = g, g->id = *id, memset(id, 0, sizeof *id);
        AX_CHECK(parse_regurg(v, path, g));
        /* not shown in the report, but the scan must be complete */
        return verified_samples(v, path, &g->samples_file, NULL);
    }
    case KIND_MIA: {
        ax_rep_mia *m = calloc(1, sizeof *m);
        if (!m || !(m->file = strdup(path))) return free(m), ax_rep_nomem();
        run->mia = m, m->id = *id, memset(id, 0, sizeof *id);
        AX_CHECK(ax_rep_parse_mia(v, path, m));
        int64_t lines = 0;
        AX_CHECK(verified_samples(v, path, &m->samples_file, &lines));
        if (m->samples_file && lines != m->members + m->nonmembers)
            return ax_errorf(AX_ERR_CORRUPT,
                             "%s: samples.lines = %lld but counts.members + counts.nonmembers = "
                             "%lld; the file was edited or damaged: rerun memscan mia",
                             path, (long long)lines, (long long)(m->members + m->nonmembers));
        return AX_OK;
    }
    default: {
        ax_rep_exposure *e = calloc(1, sizeof *e);
        if (!e || !(e->file = strdup(path))) return free(e), ax_rep_nomem();
        run->exposure = e, e->id = *id, memset(id, 0, sizeof *id);
        AX_CHECK(ax_rep_parse_exposure(v, path, e));
        AX_CHECK(verified_samples(v, path, &e->samples_file, NULL));
        return e->samples_file ? ax_rep_read_exposure_samples(e, keep & KEEP_SECRETS) : AX_OK;
    }
    }
}

/* the run's scans must name one checkpoint (and the probe and generate scans one dataset) */
static void check_same_ckpt(ax_rep_run *run) {
    if (run->warning) return;
    char w[2048];
    if (run->probe && run->regurg && !same_ident(&run->probe->id, &run->regurg->id)) {
        snprintf(w, sizeof w,
                 "the probe (%s) and the regurgitation scan (%s) name different checkpoints or "
                 "datasets",
                 run->probe->file, run->regurg->file);
        run->warning = strdup(w);
        return;
    }
    const ax_rep_ident *id = ax_rep_run_ident(run);
    const char *files[2] = {run->mia ? run->mia->file : NULL,
                            run->exposure ? run->exposure->file : NULL};
    const ax_rep_ident *ids[2] = {run->mia ? &run->mia->id : NULL,
                                  run->exposure ? &run->exposure->id : NULL};
    for (int k = 0; k < 2; k++)
        if (ids[k] && ids[k] != id && strcmp(ids[k]->ckpt_path, id->ckpt_path)) {
            snprintf(w, sizeof w, "%s scanned checkpoint %s, the run's other scans %s", files[k],
                     ids[k]->ckpt_path, id->ckpt_path);
            run->warning = strdup(w);
            return;
        }
}

/* Loads one scan file into the run, by its kind. */
static ax_status load_scan(ax_rep_run *run, const char *path, const char *want_kind, int keep) {
    ax_json *v = NULL;
    ax_rep_ident id = {0};
    const char *kind = NULL;
    ax_status st;
    AX_CHECK_GOTO(ax_rep_read_json(path, &v), out);
    const ax_json *schema = ax_json_get(v, "schema");
    if (schema && schema->type == AX_JSON_STR && !strcmp(schema->str, CURVE_SCHEMA)) {
        if (want_kind && strcmp(want_kind, CURVE_SCHEMA))
            st = ax_errorf(AX_ERR_MISMATCH, "%s: a curve file (%s), expected a scan (\"%s\")", path,
                           CURVE_SCHEMA, want_kind);
        else /* memscan --all-steps: memorization over training */
            st = ax_rep_parse_curve(v, path, run);
        goto out;
    }
    if (want_kind && !strcmp(want_kind, CURVE_SCHEMA)) {
        st = ax_errorf(AX_ERR_MISMATCH,
                       "%s: schema is not \"%s\"; a file of this name is the curve memscan "
                       "--all-steps writes",
                       path, CURVE_SCHEMA);
        goto out;
    }
    AX_CHECK_GOTO(ax_rep_scan_header(v, path, &kind, &id), out);
    if (want_kind && strcmp(kind, want_kind)) {
        st = ax_errorf(AX_ERR_MISMATCH, "%s: kind \"%s\", expected \"%s\" for this file name", path,
                       kind, want_kind);
        goto out;
    }
    int k = 0;
    while (k < N_KINDS && strcmp(kind, kind_names[k])) k++;
    if (k == N_KINDS) {
        st = ax_errorf(AX_ERR_UNSUPPORTED,
                       "%s: scan kind \"%s\" is not reported (known: extraction-probe, "
                       "regurgitation-scan, membership-inference, canary-exposure)",
                       path, kind);
        goto out;
    }
    if (scan_file(run, k)) {
        st = ax_errorf(AX_ERR_ARG,
                       "run '%s' has two %s scans (%s and %s); remove the stale one, or give each "
                       "its own label (--scan LABEL=FILE)",
                       run->label, kind, scan_file(run, k), path);
        goto out;
    }
    AX_CHECK_GOTO(load_kind(run, v, path, k, &id, keep), out);
    check_same_ckpt(run);
out:
    ax_rep_ident_free(&id);
    ax_json_free(v);
    return st;
}

/* A run directory: probe.json (memscan probe), regurgitation.json (memscan generate), the
 * older scan.json (either kind, by its "kind"), mia.json (memscan mia), exposure.json (memscan
 * exposure) and metrics.jsonl. A scan's samples are the file it records; a probe that records
 * none (an older axmem) reads samples.jsonl. */
static ax_status load_dir(ax_rep_run *run, const char *dir, int keep) {
    if (!ax_path_exists(dir))
        return ax_errorf(AX_ERR_IO,
                         "run '%s': %s does not exist; pass a directory written by "
                         "axmem memscan probe/generate/mia/exposure",
                         run->label, dir);
    enum { PROBE, REGURG, MIA, EXPOSURE, LEGACY, C_PROBE, C_MIA, C_EXP, SAMPLES, METRICS, N_NAMES };
    static const char *names[N_NAMES] = {
        "probe.json",    "regurgitation.json", "mia.json",       "exposure.json",
        "scan.json",     "probe.curve.json",   "mia.curve.json", "exposure.curve.json",
        "samples.jsonl", "metrics.jsonl"};
    static const char *kinds[C_EXP + 1] = {"extraction-probe",
                                           "regurgitation-scan",
                                           "membership-inference",
                                           "canary-exposure",
                                           NULL,
                                           CURVE_SCHEMA,
                                           CURVE_SCHEMA,
                                           CURVE_SCHEMA};
    char *p[N_NAMES];
    ax_status st = AX_OK;
    int k, any = 0;
    for (k = 0; k < N_NAMES; k++) p[k] = ax_rep_join(dir, names[k]);
    for (k = 0; k < N_NAMES; k++)
        if (!p[k]) {
            st = ax_rep_nomem();
            goto out;
        }
    for (k = PROBE; k <= C_EXP; k++) any |= ax_path_exists(p[k]);
    if (!any && !ax_path_exists(p[METRICS])) goto none;
    if (!(run->dir = strdup(dir))) {
        st = ax_rep_nomem();
        goto out;
    }
    for (k = PROBE; k <= C_EXP; k++)
        if (ax_path_exists(p[k])) AX_CHECK_GOTO(load_scan(run, p[k], kinds[k], keep), out);
    if (run->probe && !run->probe->samples_file && ax_path_exists(p[SAMPLES])) {
        run->probe->samples_file = p[SAMPLES], p[SAMPLES] = NULL;
        AX_CHECK_GOTO(read_probe_samples(run->probe, keep & KEEP_TEXT), out);
    }
    if (ax_path_exists(p[METRICS])) {
        ax_rep_train *t = calloc(1, sizeof *t);
        if (!t || !(t->file = strdup(p[METRICS]))) {
            free(t);
            st = ax_rep_nomem();
            goto out;
        }
        run->train = t;
        AX_CHECK_GOTO(ax_rep_each_jsonl(p[METRICS], metrics_line, run), out);
    }
    /* a training run alone reports when it logged scans (train --scan-every) */
    if (any || run->curve[AX_REP_CURVE_TRAIN]) goto out;
none:
    st = ax_errorf(AX_ERR_IO,
                   "run '%s': found none of %s, %s, %s, %s, %s, a *.curve.json (memscan "
                   "--all-steps) or scan records in metrics.jsonl (train --scan-every); point "
                   "--run at a directory where axmem memscan probe/generate/mia/exposure wrote "
                   "its scan, or use --scan LABEL=FILE",
                   run->label, p[PROBE], p[REGURG], p[MIA], p[EXPOSURE], p[LEGACY]);
out:
    for (k = 0; k < N_NAMES; k++) free(p[k]);
    return st;
}

static ax_status load_index(const char *path, ax_rep_index **out) {
    ax_json *v = NULL;
    ax_status st = AX_OK;
    ax_rep_index *x = calloc(1, sizeof *x);
    if (!x) return ax_rep_nomem();
    *out = x;
    if (!(x->file = strdup(path))) return ax_rep_nomem();
    AX_CHECK(ax_rep_read_json(path, &v));
    const ax_json *schema = ax_json_get(v, "schema"), *h;
    if (!schema || schema->type != AX_JSON_STR ||
        strncmp(schema->str, INDEX_SCHEMA, strlen(INDEX_SCHEMA))) {
        st = ax_errorf(AX_ERR_MISMATCH,
                       "%s: not a memscan index sidecar (schema should start \"%s\"); pass the "
                       "INDEX.json written next to `axmem memscan index --out INDEX`",
                       path, INDEX_SCHEMA);
        goto out;
    }
    if (strcmp(schema->str + strlen(INDEX_SCHEMA), "1")) {
        st = ax_errorf(AX_ERR_MISMATCH,
                       "%s: index schema \"%s\" is not supported (this axmem "
                       "reads %s1)",
                       path, schema->str, INDEX_SCHEMA);
        goto out;
    }
    AX_CHECK_GOTO(ax_rep_get_int(v, "", "n", 1, AX_REP_MAX_TOKENS, path, &x->n), out);
    AX_CHECK_GOTO(ax_rep_get_int(v, "", "windows", 0, AX_REP_MAX_COUNT, path, &x->windows), out);
    AX_CHECK_GOTO(ax_rep_get_int(v, "", "distinct_windows", 0, x->windows, path, &x->distinct),
                  out);
    AX_CHECK_GOTO(ax_rep_get_obj(v, "duplication_histogram", path, &h), out);
    x->labels = calloc(h->n + 1, sizeof(char *));
    x->counts = calloc(h->n + 1, sizeof(int64_t));
    if (!x->labels || !x->counts) {
        st = ax_rep_nomem();
        goto out;
    }
    for (size_t k = 0; k < h->n; k++) {
        char field[160];
        snprintf(field, sizeof field, "duplication_histogram.%.100s", h->keys[k]);
        AX_CHECK_GOTO(ax_rep_check_int(h->items[k], 0, x->distinct, path, field, &x->counts[k]),
                      out);
        if (!(x->labels[k] = strdup(h->keys[k]))) {
            st = ax_rep_nomem();
            goto out;
        }
        x->n_hist++;
    }
out:
    ax_json_free(v);
    return st;
}

ax_status ax_rep_load(const ax_report_opts *o, ax_report *r) {
    memset(r, 0, sizeof *r);
    r->text_chars = o->redact ? 0 : o->text_chars;
    r->show_text = o->show_text && r->text_chars > 0;
    /* training text feeds report.json unless redacted; secrets only --show-text reports */
    int keep = (r->text_chars > 0 ? KEEP_TEXT : 0) | (r->show_text ? KEEP_SECRETS : 0);
    r->runs = calloc((size_t)(o->n_inputs > 0 ? o->n_inputs : 1), sizeof *r->runs);
    if (!r->runs) return ax_rep_nomem();
    for (int i = 0; i < o->n_inputs; i++) {
        const ax_report_input *in = &o->inputs[i];
        ax_rep_run *run = find_run(r, in->label);
        if (run && !in->is_file)
            return ax_errorf(
                AX_ERR_ARG, "run label '%s' is used twice; give each run its own label", in->label);
        if (run && run->dir)
            return ax_errorf(AX_ERR_ARG, "--scan %s=%s: run '%s' is already a --run directory",
                             in->label, in->path, in->label);
        if (!run) {
            run = &r->runs[r->n_runs++];
            if (!(run->label = strdup(in->label))) return ax_rep_nomem();
        }
        if (in->is_file) {
            if (!ax_path_exists(in->path))
                return ax_errorf(AX_ERR_IO, "--scan %s=%s: no such file", in->label, in->path);
            AX_CHECK(load_scan(run, in->path, NULL, keep));
        } else {
            AX_CHECK(load_dir(run, in->path, keep));
        }
    }
    if (o->index) AX_CHECK(load_index(o->index, &r->index));
    return AX_OK;
}

/* generations that held a verbatim span: the histogram's total minus its "none" bucket when
 * present, else the rate times the configured sample count */
void ax_rep_regurg_counts(const ax_rep_regurg *g, int64_t *hit, int64_t *total) {
    int64_t sum = 0, none = -1;
    for (int k = 0; k < g->n_hist; k++) {
        sum += g->hist[k];
        if (!strcmp(g->hist_labels[k], "none")) none = g->hist[k];
    }
    if (g->n_hist && none >= 0)
        *total = sum, *hit = sum - none;
    else
        *total = g->samples, *hit = (int64_t)llround(g->frac_span * (double)g->samples);
}

const ax_rep_ident *ax_rep_run_ident(const ax_rep_run *run) {
    return run->probe      ? &run->probe->id
           : run->regurg   ? &run->regurg->id
           : run->mia      ? &run->mia->id
           : run->exposure ? &run->exposure->id
                           : NULL;
}

void ax_rep_free(ax_report *r) {
    for (int i = 0; i < r->n_runs; i++) {
        ax_rep_run *run = &r->runs[i];
        if (run->probe) {
            ax_rep_probe *p = run->probe;
            ax_rep_ident_free(&p->id);
            for (int k = 0; k < p->n_dup; k++) free(p->dup[k].bucket);
            for (int k = 0; k < p->n_top; k++) sample_free(&p->top[k]);
            free(p->file), free(p->mp_hist), free(p->dup), free(p->samples_file), free(p);
        }
        if (run->regurg) {
            ax_rep_regurg *g = run->regurg;
            ax_rep_ident_free(&g->id);
            for (int k = 0; k < g->n_hist; k++) free(g->hist_labels[k]);
            free(g->file), free(g->hist_labels), free(g->hist), free(g->samples_file), free(g);
        }
        ax_rep_mia_free(run->mia);
        ax_rep_exposure_free(run->exposure);
        for (int k = 0; k < AX_REP_NCURVES; k++) ax_rep_curve_free(run->curve[k]);
        if (run->train) {
            ax_rep_train *t = run->train;
            free(t->file), free(t->step), free(t->loss), free(t->val_step), free(t->val_loss);
            free(t);
        }
        free(run->label), free(run->dir), free(run->warning);
    }
    free(r->runs);
    if (r->index) {
        for (int k = 0; k < r->index->n_hist; k++) free(r->index->labels[k]);
        free(r->index->labels), free(r->index->counts), free(r->index->file), free(r->index);
    }
    memset(r, 0, sizeof *r);
}
