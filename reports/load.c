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

static ax_status parse_probe(ax_arena *a, const ax_json *v, const char *path, ax_rep_probe *p) {
    const ax_json *cfg, *m, *tables = ax_json_get(v, "tables"), *h = NULL, *d = NULL;
    AX_CHECK(ax_rep_get_obj(v, "config", path, &cfg));
    AX_CHECK(ax_rep_get_obj(v, "metrics", path, &m));
    if (tables && tables->type != AX_JSON_OBJ)
        return ax_errorf(AX_ERR_CORRUPT, "%s: tables is not an object", path);
    AX_CHECK(ax_rep_get_int(cfg, "config", "prefix", 1, AX_REP_MAX_TOKENS, path, &p->prefix));
    AX_CHECK(ax_rep_get_int(cfg, "config", "suffix", 1, AX_REP_MAX_TOKENS, path, &p->suffix));
    int64_t samples;
    AX_CHECK(ax_rep_opt_int(cfg, "config", "samples", 0, AX_REP_MAX_COUNT, -1, path, &samples));
    AX_CHECK(ax_rep_get_rate(m, "metrics", "exact_match_rate", path, &p->exact));
    AX_CHECK(ax_rep_get_rate(m, "metrics", "token_accuracy", path, &p->tok_acc));
    AX_CHECK(ax_rep_get_rate(m, "metrics", "rouge_l", path, &p->rouge_l));
    AX_CHECK(ax_rep_get_in(m, "metrics", "matched_prefix_mean", 0, (double)p->suffix, path,
                           &p->mp_mean));
    AX_CHECK(ax_rep_opt_typed(tables, "matched_prefix_hist", AX_JSON_ARR, path,
                              "tables.matched_prefix_hist", &h));
    AX_CHECK(
        ax_rep_opt_typed(tables, "by_duplication", AX_JSON_ARR, path, "tables.by_duplication", &d));
    if (h) { /* probes by matched-prefix length 0..S: the counts behind every rate */
        if (h->n != (size_t)p->suffix + 1)
            return ax_rep_damaged(path, "memscan probe",
                                  "tables.matched_prefix_hist has %zu entries, expected suffix + 1 "
                                  "= %lld",
                                  h->n, (long long)p->suffix + 1);
        p->mp_hist = ax_arena_alloc(a, h->n * sizeof(int64_t));
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
            return ax_rep_damaged(path, "memscan probe",
                                  "tables.matched_prefix_hist counts %lld probes but "
                                  "config.samples is %lld",
                                  (long long)p->n, (long long)samples);
        if (fabs(p->exact.mean * (double)p->n - (double)p->n_exact) > 0.5)
            return ax_rep_damaged(path, "memscan probe",
                                  "metrics.exact_match_rate.mean = %g disagrees with "
                                  "tables.matched_prefix_hist (%lld of %lld probes exact)",
                                  p->exact.mean, (long long)p->n_exact, (long long)p->n);
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
        p->dup = ax_arena_alloc(a, d->n * sizeof *p->dup);
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
            p->dup[k].bucket = ax_arena_str(a, b);
            total += p->dup[k].samples;
        }
        AX_CHECK(ax_rep_check_le(total, "the sum of tables.by_duplication[].samples", p->n,
                                 "the probes counted", path));
    }
    return AX_OK;
}

static ax_status parse_regurg(ax_arena *a, const ax_json *v, const char *path, ax_rep_regurg *g) {
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
        return ax_rep_damaged(path, "memscan generate",
                              "metrics.mean_longest_span = %g exceeds metrics.max_longest_span = "
                              "%lld",
                              g->mean_span, (long long)g->max_span);
    AX_CHECK(ax_rep_opt_typed(tables, "longest_span_hist", AX_JSON_OBJ, path,
                              "tables.longest_span_hist", &h));
    if (h && h->n) {
        g->hist_labels = ax_arena_alloc(a, h->n * sizeof(char *));
        g->hist = ax_arena_alloc(a, h->n * sizeof(int64_t));
        if (!g->hist_labels || !g->hist) return ax_rep_nomem();
        g->n_hist = (int)h->n;
        int64_t total = 0;
        for (size_t k = 0; k < h->n; k++) {
            char field[160];
            snprintf(field, sizeof field, "tables.longest_span_hist.%.100s", h->keys[k]);
            AX_CHECK(ax_rep_check_int(h->items[k], 0, g->samples, path, field, &g->hist[k]));
            g->hist_labels[k] = ax_arena_str(a, h->keys[k]);
            total += g->hist[k];
        }
        if (total != g->samples)
            return ax_rep_damaged(path, "memscan generate",
                                  "tables.longest_span_hist counts %lld generations but "
                                  "config.samples is %lld",
                                  (long long)total, (long long)g->samples);
    }
    int64_t hit, total;
    ax_rep_regurg_counts(g, &hit, &total);
    if (fabs(g->frac_span * (double)total - (double)hit) > 0.5)
        return ax_rep_damaged(path, "memscan generate",
                              "metrics.frac_with_verbatim_span = %g disagrees with "
                              "tables.longest_span_hist (%lld of %lld generations)",
                              g->frac_span, (long long)hit, (long long)total);
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
static ax_status read_probe_samples(ax_arena *a, ax_rep_probe *p, int keep_text) {
    sample_ctx c = {p, p->file, keep_text};
    ax_status st = ax_rep_each_jsonl(p->samples_file, sample_line, &c);
    for (int k = 0; k < p->n_top; k++) { /* the texts kept, into the arena */
        ax_rep_sample *s = &p->top[k], t = *s;
        s->truth_text = ax_arena_str(a, t.truth_text);
        s->generated_text = ax_arena_str(a, t.generated_text);
        sample_free(&t);
    }
    AX_CHECK(st);
    if (p->n_sample_rows != p->n)
        return ax_errorf(AX_ERR_MISMATCH,
                         "%s has %lld samples but %s probed %lld documents: they do not belong "
                         "together; rerun memscan probe",
                         p->samples_file, (long long)p->n_sample_rows, p->file, (long long)p->n);
    return AX_OK;
}

/* (x, y) appended to the n-element arrays xs, ys of capacity cap */
static ax_status push2(ax_arena *a, double **xs, double **ys, int64_t *n, size_t *cap, double x,
                       double y) {
    size_t c = *cap;
    double *nx = ax_arena_grow(a, *xs, (size_t)*n, &c, sizeof x),
           *ny = nx ? ax_arena_grow(a, *ys, (size_t)*n, cap, sizeof y) : NULL;
    if (!ny) return ax_rep_nomem();
    *xs = nx, *ys = ny;
    nx[*n] = x, ny[(*n)++] = y;
    return AX_OK;
}

typedef struct {
    ax_arena *a;
    ax_rep_run *run;
} metrics_ctx;

static ax_status metrics_line(const ax_json *row, const char *what, void *ctx) {
    ax_arena *a = ((metrics_ctx *)ctx)->a;
    ax_rep_run *run = ((metrics_ctx *)ctx)->run;
    ax_rep_train *t = run->train;
    double step, loss;
    if (ax_json_get(row, "scan")) /* a scan record of train --scan-every: extraction vs step */
        return ax_rep_scan_record(a, row, what, t->file, run);
    AX_CHECK(ax_rep_get_in(row, "", "step", 0, (double)AX_REP_MAX_COUNT, what, &step));
    AX_CHECK(ax_rep_get_in(row, "", "loss", -DBL_MAX, DBL_MAX, what, &loss));
    AX_CHECK(push2(a, &t->step, &t->loss, &t->n, &t->cap, step, loss));
    const ax_json *eps = ax_json_get(row, "epsilon"), *delta = ax_json_get(row, "delta");
    if (!eps) eps = ax_json_get(row, "dp_epsilon"), delta = ax_json_get(row, "dp_delta");
    if (eps && eps->type == AX_JSON_NUM && delta && delta->type == AX_JSON_NUM) {
        AX_CHECK(ax_rep_check_num(eps->num, 0, DBL_MAX, what, "epsilon"));
        AX_CHECK(ax_rep_check_num(delta->num, 0, 1, what, "delta"));
        t->has_dp = 1, t->epsilon = eps->num, t->delta = delta->num, t->eps_step = step;
    }
    const ax_json *vl = ax_json_get(row, "val_loss");
    if (vl && vl->type == AX_JSON_NUM) {
        AX_CHECK(ax_rep_check_num(vl->num, -DBL_MAX, DBL_MAX, what, "val_loss"));
        AX_CHECK(push2(a, &t->val_step, &t->val_loss, &t->n_val, &t->cap_val, step, vl->num));
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
static ax_status verified_samples(ax_arena *a, const ax_json *v, const char *path, char **out,
                                  int64_t *lines) {
    ax_rep_samples_rec rec = {0};
    AX_CHECK(ax_rep_samples_rec_read(a, v, path, &rec));
    if (rec.path) AX_CHECK(ax_rep_samples_rec_verify(&rec, path));
    if (lines) *lines = rec.lines;
    *out = rec.path;
    return AX_OK;
}

/* The one parsed scan v (its header read into id) by kind. */
static ax_status load_kind(ax_arena *a, ax_rep_run *run, const ax_json *v, const char *path,
                           int kind, const ax_rep_ident *id, int keep) {
    static const size_t size[N_KINDS] = {sizeof(ax_rep_probe), sizeof(ax_rep_regurg),
                                         sizeof(ax_rep_mia), sizeof(ax_rep_exposure)};
    void *x = ax_arena_alloc(a, size[kind]);
    if (!x) return ax_rep_nomem();
    switch (kind) {
    case KIND_PROBE: {
        ax_rep_probe *p = run->probe = x;
        p->file = ax_arena_str(a, path), p->id = *id;
        AX_CHECK(parse_probe(a, v, path, p));
        AX_CHECK(verified_samples(a, v, path, &p->samples_file, NULL));
        return p->samples_file ? read_probe_samples(a, p, keep & KEEP_TEXT) : AX_OK;
    }
    case KIND_REGURG: {
        ax_rep_regurg *g = run->regurg = x;
        g->file = ax_arena_str(a, path), g->id = *id;
        AX_CHECK(parse_regurg(a, v, path, g));
        /* not shown in the report, but the scan must be complete */
        return verified_samples(a, v, path, &g->samples_file, NULL);
    }
    case KIND_MIA: {
        ax_rep_mia *m = run->mia = x;
        m->file = ax_arena_str(a, path), m->id = *id;
        AX_CHECK(ax_rep_parse_mia(a, v, path, m));
        int64_t lines = 0;
        AX_CHECK(verified_samples(a, v, path, &m->samples_file, &lines));
        if (m->samples_file && lines != m->members + m->nonmembers)
            return ax_rep_damaged(path, "memscan mia",
                                  "samples.lines = %lld but counts.members + counts.nonmembers = "
                                  "%lld",
                                  (long long)lines, (long long)(m->members + m->nonmembers));
        return AX_OK;
    }
    default: {
        ax_rep_exposure *e = run->exposure = x;
        e->file = ax_arena_str(a, path), e->id = *id;
        AX_CHECK(ax_rep_parse_exposure(a, v, path, e));
        AX_CHECK(verified_samples(a, v, path, &e->samples_file, NULL));
        return e->samples_file ? ax_rep_read_exposure_samples(a, e, keep & KEEP_SECRETS) : AX_OK;
    }
    }
}

/* the run's scans must name one checkpoint (and the probe and generate scans one dataset) */
static void check_same_ckpt(ax_arena *a, ax_rep_run *run) {
    if (run->warning) return;
    if (run->probe && run->regurg && !same_ident(&run->probe->id, &run->regurg->id)) {
        run->warning = ax_arena_printf(a,
                                       "the probe (%s) and the regurgitation scan (%s) name "
                                       "different checkpoints or datasets",
                                       run->probe->file, run->regurg->file);
        return;
    }
    const ax_rep_ident *id = ax_rep_run_ident(run);
    const char *files[2] = {run->mia ? run->mia->file : NULL,
                            run->exposure ? run->exposure->file : NULL};
    const ax_rep_ident *ids[2] = {run->mia ? &run->mia->id : NULL,
                                  run->exposure ? &run->exposure->id : NULL};
    for (int k = 0; k < 2 && !run->warning; k++)
        if (ids[k] && ids[k] != id && strcmp(ids[k]->ckpt_path, id->ckpt_path))
            run->warning = ax_arena_printf(a, "%s scanned checkpoint %s, the run's other scans %s",
                                           files[k], ids[k]->ckpt_path, id->ckpt_path);
}

/* Loads one scan file into the run, by its kind. */
static ax_status load_scan(ax_arena *a, ax_rep_run *run, const char *path, const char *want_kind,
                           int keep) {
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
            st = ax_rep_parse_curve(a, v, path, run);
        goto out;
    }
    if (want_kind && !strcmp(want_kind, CURVE_SCHEMA)) {
        st = ax_errorf(AX_ERR_MISMATCH,
                       "%s: schema is not \"%s\"; a file of this name is the curve memscan "
                       "--all-steps writes",
                       path, CURVE_SCHEMA);
        goto out;
    }
    AX_CHECK_GOTO(ax_rep_scan_header(a, v, path, &kind, &id), out);
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
    AX_CHECK_GOTO(load_kind(a, run, v, path, k, &id, keep), out);
    check_same_ckpt(a, run);
out:
    ax_json_free(v);
    return st;
}

/* A run directory: probe.json (memscan probe), regurgitation.json (memscan generate), the
 * older scan.json (either kind, by its "kind"), mia.json (memscan mia), exposure.json (memscan
 * exposure) and metrics.jsonl. A scan's samples are the file it records; a probe that records
 * none (an older axmem) reads samples.jsonl. */
static ax_status load_dir(ax_arena *a, ax_rep_run *run, const char *dir, int keep) {
    if (!ax_path_exists(dir))
        return ax_errorf(AX_ERR_IO,
                         "run '%s': %s does not exist; pass a directory written by "
                         "axmem memscan probe/generate/mia/exposure",
                         run->label, dir);
    enum {
        PROBE,
        REGURG,
        MIA,
        EXPOSURE,
        LEGACY,
        C_PROBE,
        C_MIA,
        C_EXP,
        SAMPLES,
        METRICS,
        STUDY,
        N_NAMES
    };
    static const char *names[N_NAMES] = {
        "probe.json",    "regurgitation.json", "mia.json",       "exposure.json",
        "scan.json",     "probe.curve.json",   "mia.curve.json", "exposure.curve.json",
        "samples.jsonl", "metrics.jsonl",      "study.json"};
    static const char *kinds[C_EXP + 1] = {"extraction-probe",
                                           "regurgitation-scan",
                                           "membership-inference",
                                           "canary-exposure",
                                           NULL,
                                           CURVE_SCHEMA,
                                           CURVE_SCHEMA,
                                           CURVE_SCHEMA};
    char *p[N_NAMES];
    int k, any = 0;
    for (k = 0; k < N_NAMES; k++) p[k] = ax_arena_printf(a, "%s/%s", dir, names[k]);
    for (k = PROBE; k <= C_EXP; k++) any |= ax_path_exists(p[k]);
    if (any || ax_path_exists(p[METRICS])) run->dir = ax_arena_str(a, dir);
    for (k = PROBE; k <= C_EXP; k++)
        if (ax_path_exists(p[k])) AX_CHECK(load_scan(a, run, p[k], kinds[k], keep));
    if (run->probe && !run->probe->samples_file && ax_path_exists(p[SAMPLES])) {
        run->probe->samples_file = p[SAMPLES];
        AX_CHECK(read_probe_samples(a, run->probe, keep & KEEP_TEXT));
    }
    if (ax_path_exists(p[METRICS])) {
        if (!(run->train = ax_arena_alloc(a, sizeof *run->train))) return ax_rep_nomem();
        run->train->file = p[METRICS];
        AX_CHECK(ax_rep_each_jsonl(p[METRICS], metrics_line, &(metrics_ctx){a, run}));
    }
    if (ax_path_exists(p[STUDY])) { /* axmem study's record of the mitigation */
        ax_json *v = NULL;
        if (!(run->study = ax_arena_alloc(a, sizeof *run->study))) return ax_rep_nomem();
        AX_CHECK(ax_rep_read_json(p[STUDY], &v));
        ax_status st = ax_rep_parse_study(a, v, p[STUDY], run->study);
        ax_json_free(v);
        AX_CHECK(st);
    }
    /* a training run alone reports when it logged scans (train --scan-every) */
    if (any || run->curve[AX_REP_CURVE_TRAIN]) return AX_OK;
    return ax_errorf(AX_ERR_IO,
                     "run '%s': found none of %s, %s, %s, %s, %s, a *.curve.json (memscan "
                     "--all-steps) or scan records in metrics.jsonl (train --scan-every); point "
                     "--run at a directory where axmem memscan probe/generate/mia/exposure wrote "
                     "its scan, or use --scan LABEL=FILE",
                     run->label, p[PROBE], p[REGURG], p[MIA], p[EXPOSURE], p[LEGACY]);
}

static ax_status parse_index(ax_arena *a, const ax_json *v, const char *path, ax_rep_index *x) {
    const ax_json *schema = ax_json_get(v, "schema"), *h;
    if (!schema || schema->type != AX_JSON_STR ||
        strncmp(schema->str, INDEX_SCHEMA, strlen(INDEX_SCHEMA)))
        return ax_errorf(AX_ERR_MISMATCH,
                         "%s: not a memscan index sidecar (schema should start \"%s\"); pass the "
                         "INDEX.json written next to `axmem memscan index --out INDEX`",
                         path, INDEX_SCHEMA);
    if (strcmp(schema->str + strlen(INDEX_SCHEMA), "1"))
        return ax_errorf(AX_ERR_MISMATCH,
                         "%s: index schema \"%s\" is not supported (this axmem reads %s1)", path,
                         schema->str, INDEX_SCHEMA);
    AX_CHECK(ax_rep_get_int(v, "", "n", 1, AX_REP_MAX_TOKENS, path, &x->n));
    AX_CHECK(ax_rep_get_int(v, "", "windows", 0, AX_REP_MAX_COUNT, path, &x->windows));
    AX_CHECK(ax_rep_get_int(v, "", "distinct_windows", 0, x->windows, path, &x->distinct));
    AX_CHECK(ax_rep_get_obj(v, "duplication_histogram", path, &h));
    x->labels = ax_arena_alloc(a, (h->n + 1) * sizeof(char *));
    x->counts = ax_arena_alloc(a, (h->n + 1) * sizeof(int64_t));
    if (!x->labels || !x->counts) return ax_rep_nomem();
    for (size_t k = 0; k < h->n; k++, x->n_hist++) {
        char field[160];
        snprintf(field, sizeof field, "duplication_histogram.%.100s", h->keys[k]);
        AX_CHECK(ax_rep_check_int(h->items[k], 0, x->distinct, path, field, &x->counts[k]));
        x->labels[k] = ax_arena_str(a, h->keys[k]);
    }
    return AX_OK;
}

ax_status ax_rep_load(const ax_report_opts *o, ax_report *r) {
    memset(r, 0, sizeof *r);
    ax_arena *a = &r->mem;
    r->text_chars = o->redact ? 0 : o->text_chars;
    r->show_text = o->show_text && r->text_chars > 0;
    /* training text feeds report.json unless redacted; secrets only --show-text reports */
    int keep = (r->text_chars > 0 ? KEEP_TEXT : 0) | (r->show_text ? KEEP_SECRETS : 0);
    r->runs = ax_arena_alloc(a, (size_t)(o->n_inputs > 0 ? o->n_inputs : 1) * sizeof *r->runs);
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
        if (!run) run = &r->runs[r->n_runs++], run->label = ax_arena_str(a, in->label);
        if (in->is_file && !ax_path_exists(in->path))
            return ax_errorf(AX_ERR_IO, "--scan %s=%s: no such file", in->label, in->path);
        AX_CHECK(in->is_file ? load_scan(a, run, in->path, NULL, keep)
                             : load_dir(a, run, in->path, keep));
    }
    if (o->index) {
        ax_json *v = NULL;
        if (!(r->index = ax_arena_alloc(a, sizeof *r->index))) return ax_rep_nomem();
        r->index->file = ax_arena_str(a, o->index);
        AX_CHECK(ax_rep_read_json(o->index, &v));
        ax_status st = parse_index(a, v, o->index, r->index);
        ax_json_free(v);
        AX_CHECK(st);
    }
    return a->oom ? ax_rep_nomem() : AX_OK;
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
    ax_arena_free(&r->mem);
    memset(r, 0, sizeof *r);
}
