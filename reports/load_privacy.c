/* Reads the privacy scans: mia.json (memscan mia: per-score AUC with its interval, TPR at the
 * low FPRs its non-members resolve, the ROC curve, the model-free baselines) and exposure.json
 * (memscan exposure: the table by repeat count) with the canaries of exposure.samples.jsonl. As
 * strict as the other loaders: every value is checked against its domain and against the values it
 * must agree with, and a failure names the file and the field. Secrets are copied only when the
 * report may show them. */
#include "lib/core/json.h"
#include "reports/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- mia.json */

/* metrics.NAME.roc: [[fpr, tpr], ...] from (0,0) to (1,1), non-decreasing in both */
static ax_status parse_roc(ax_arena *a, const ax_json *roc, const char *path, const char *field,
                           ax_rep_mia_score *s) {
    char what[400];
    if (!roc || roc->type != AX_JSON_ARR || roc->n < 2 || roc->n > 1000000)
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: %s is missing or not an array of at least 2 [fpr, tpr] points", path,
                         field);
    s->fpr = ax_arena_alloc(a, sizeof(double) * roc->n);
    s->tpr = ax_arena_alloc(a, sizeof(double) * roc->n);
    if (!s->fpr || !s->tpr) return ax_rep_nomem();
    s->n_roc = (int)roc->n;
    for (size_t i = 0; i < roc->n; i++) {
        const ax_json *pt = roc->items[i];
        snprintf(what, sizeof what, "%.200s[%zu]", field, i);
        if (pt->type != AX_JSON_ARR || pt->n != 2 || pt->items[0]->type != AX_JSON_NUM ||
            pt->items[1]->type != AX_JSON_NUM)
            return ax_errorf(AX_ERR_CORRUPT, "%s: %s is not [fpr, tpr]", path, what);
        s->fpr[i] = pt->items[0]->num, s->tpr[i] = pt->items[1]->num;
        AX_CHECK(ax_rep_check_num(s->fpr[i], 0, 1, path, what));
        AX_CHECK(ax_rep_check_num(s->tpr[i], 0, 1, path, what));
        if (i && (s->fpr[i] < s->fpr[i - 1] || s->tpr[i] < s->tpr[i - 1]))
            return ax_rep_damaged(path, "memscan mia",
                                  "%.200s[%zu] goes down from the point before it", field, i);
    }
    if (s->fpr[0] != 0 || s->tpr[0] != 0 || s->fpr[roc->n - 1] != 1 || s->tpr[roc->n - 1] != 1)
        return ax_rep_damaged(path, "memscan mia", "%.200s does not run from [0, 0] to [1, 1]",
                              field);
    return AX_OK;
}

int64_t ax_rep_fpr_min_nonmembers(double fpr) {
    if (!(fpr > 0 && fpr <= 1)) return 0;
    int64_t n = 1;
    while (floor(fpr * (double)n + 1e-9) < 1) n++;
    return n;
}

int ax_rep_mia_far(const ax_rep_mia_score *s) {
    if (s->auc_lo > 0.5 || s->auc_hi < 0.5) return 2;
    return fabs(s->auc - 0.5) >= AX_REP_MIA_FAR_AUC ? 1 : 0;
}

/* sec.key: a TPR in [0, 1], or null where nn non-members cannot resolve fpr. A number at such
 * a rate (a scan from before memscan mia left them out) is the TPR at FPR 0 under the rate's
 * name: read as NaN, so no writer shows it. */
static ax_status parse_tpr(const ax_json *o, const char *sec, const char *key, double fpr,
                           int64_t nn, const char *path, double *out) {
    const ax_json *x = ax_json_get(o, key);
    int64_t need = ax_rep_fpr_min_nonmembers(fpr);
    if (x && x->type == AX_JSON_NULL) {
        *out = NAN;
        return nn < need ? AX_OK
                         : ax_rep_damaged(path, "memscan mia",
                                          "%s.%s is null but %lld non-members resolve %g%% FPR",
                                          sec, key, (long long)nn, fpr * 100);
    }
    AX_CHECK(ax_rep_get_in(o, sec, key, 0, 1, path, out));
    if (nn < need) *out = NAN;
    return AX_OK;
}

/* sec = "metrics.NAME" or "model_free.NAME"; nn: the scan's non-members */
static ax_status parse_score(ax_arena *a, const ax_json *o, const char *block, const char *name,
                             int64_t nn, const char *path, ax_rep_mia_score *s) {
    char sec[80], field[400];
    snprintf(sec, sizeof sec, "%s.%.60s", block, name);
    if (o->type != AX_JSON_OBJ)
        return ax_errorf(AX_ERR_CORRUPT, "%s: %s is not an object", path, sec);
    s->name = ax_arena_str(a, name);
    AX_CHECK(ax_rep_get_in(o, sec, "auc", 0, 1, path, &s->auc));
    double ci[2]; /* a bootstrap percentile interval need not hold the point estimate */
    snprintf(field, sizeof field, "%s.auc_ci95", sec);
    AX_CHECK(ax_rep_get_pair(o, "auc_ci95", field, 0, 1, "memscan mia", path, ci));
    s->auc_lo = ci[0], s->auc_hi = ci[1];
    AX_CHECK(parse_tpr(o, sec, "tpr_at_fpr_0.001", 0.001, nn, path, &s->tpr_0_1));
    AX_CHECK(parse_tpr(o, sec, "tpr_at_fpr_0.01", 0.01, nn, path, &s->tpr_1));
    if (s->tpr_0_1 > s->tpr_1) /* TPR at a fixed FPR cannot fall as the FPR grows (false when
                                  either is NaN) */
        return ax_rep_damaged(path, "memscan mia",
                              "%s.tpr_at_fpr_0.001 = %g exceeds tpr_at_fpr_0.01 = %g", sec,
                              s->tpr_0_1, s->tpr_1);
    snprintf(field, sizeof field, "%s.roc", sec);
    return parse_roc(a, ax_json_get(o, "roc"), path, field, s);
}

/* members / nonmembers block: the set's identity and how many documents were scored */
static ax_status set_block(ax_arena *a, const ax_json *v, const char *key, int64_t count,
                           const char *path, char **set_path) {
    const ax_json *o;
    const char *p;
    int64_t docs, scored;
    char field[64];
    AX_CHECK(ax_rep_get_obj(v, key, path, &o));
    AX_CHECK(ax_json_get_str(o, "path", path, &p));
    AX_CHECK(ax_rep_get_int(o, key, "docs", 0, AX_REP_MAX_COUNT, path, &docs));
    AX_CHECK(ax_rep_get_int(o, key, "scored_docs", 0, docs, path, &scored));
    if (scored != count) {
        snprintf(field, sizeof field, "%s.scored_docs", key);
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: %s = %lld disagrees with counts.%s = %lld; the file was edited or "
                         "damaged: rerun memscan mia",
                         path, field, (long long)scored, key, (long long)count);
    }
    if (set_path) *set_path = ax_arena_str(a, p);
    return AX_OK;
}

/* model_free: the baselines that read no model, as metrics' entries (absent from scans written
 * before memscan mia computed them: has_free stays 0 and the writers say so) */
static ax_status parse_model_free(ax_arena *a, const ax_json *v, const char *path, ax_rep_mia *m) {
    const ax_json *mf = ax_json_get(v, "model_free");
    if (!mf) return AX_OK;
    if (mf->type != AX_JSON_OBJ || mf->n == 0 || mf->n > AX_REP_MIA_FREE)
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: model_free is not an object of 1 to %d scores; the file was edited "
                         "or damaged: rerun memscan mia",
                         path, AX_REP_MIA_FREE);
    m->has_free = 1;
    for (size_t k = 0; k < mf->n; k++, m->n_free++)
        AX_CHECK(parse_score(a, mf->items[k], "model_free", mf->keys[k], m->nonmembers, path,
                             &m->free[k]));
    return AX_OK;
}

ax_status ax_rep_parse_mia(ax_arena *a, const ax_json *v, const char *path, ax_rep_mia *m) {
    const ax_json *cfg, *counts, *metrics, *ref = ax_json_get(v, "reference");
    AX_CHECK(ax_rep_get_obj(v, "config", path, &cfg));
    AX_CHECK(ax_rep_get_obj(v, "counts", path, &counts));
    AX_CHECK(ax_rep_get_obj(v, "metrics", path, &metrics));
    AX_CHECK(ax_rep_get_int(cfg, "config", "tokens_per_doc", 1, AX_REP_MAX_TOKENS, path,
                            &m->tokens_per_doc));
    AX_CHECK(ax_rep_get_int(counts, "counts", "members", 1, AX_REP_MAX_COUNT, path, &m->members));
    AX_CHECK(
        ax_rep_get_int(counts, "counts", "nonmembers", 1, AX_REP_MAX_COUNT, path, &m->nonmembers));
    AX_CHECK(set_block(a, v, "members", m->members, path, NULL));
    AX_CHECK(set_block(a, v, "nonmembers", m->nonmembers, path, &m->nonmembers_path));
    if (ref && ref->type == AX_JSON_OBJ) {
        const char *rp;
        AX_CHECK(ax_json_get_str(ref, "path", path, &rp));
        m->ref_ckpt = ax_arena_str(a, rp);
    } else if (ref && ref->type != AX_JSON_NULL) {
        return ax_errorf(AX_ERR_CORRUPT, "%s: reference is neither null nor an object", path);
    }
    if (metrics->n == 0 || metrics->n > AX_REP_MIA_SCORES)
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: metrics holds %zu scores (expected 1 to %d); the file was edited or "
                         "damaged: rerun memscan mia",
                         path, metrics->n, AX_REP_MIA_SCORES);
    for (size_t k = 0; k < metrics->n; k++, m->n_score++)
        AX_CHECK(parse_score(a, metrics->items[k], "metrics", metrics->keys[k], m->nonmembers, path,
                             &m->score[k]));
    AX_CHECK(parse_model_free(a, v, path, m));
    AX_CHECK(ax_rep_opt_int(cfg, "config", "zlib_level", 1, 9, 0, path, &m->zlib_level));
    if (m->ref_ckpt == NULL)
        for (int k = 0; k < m->n_score; k++)
            if (!strcmp(m->score[k].name, "ref"))
                return ax_rep_damaged(path, "memscan mia",
                                      "metrics.ref is present but reference is null");
    return AX_OK;
}

/* ---------------------------------------------------------------- exposure.json */

static ax_status exp_row(const ax_json *o, const char *sec, double max_e, const char *path,
                         ax_rep_exp_row *r) {
    if (!o || o->type != AX_JSON_OBJ)
        return ax_errorf(AX_ERR_CORRUPT, "%s: %s is missing or not an object", path, sec);
    double hi = max_e + 1e-9 * (max_e > 1 ? max_e : 1); /* printed with 17 digits */
    AX_CHECK(ax_rep_get_int(o, sec, "canaries", 1, AX_REP_MAX_COUNT, path, &r->canaries));
    AX_CHECK(ax_rep_get_in(o, sec, "exposure_mean", 0, hi, path, &r->mean));
    AX_CHECK(ax_rep_get_in(o, sec, "exposure_median", 0, hi, path, &r->median));
    AX_CHECK(ax_rep_get_in(o, sec, "exposure_min", 0, hi, path, &r->min));
    AX_CHECK(ax_rep_get_in(o, sec, "exposure_max", 0, hi, path, &r->max));
    AX_CHECK(ax_rep_get_int(o, sec, "extracted", 0, r->canaries, path, &r->extracted));
    AX_CHECK(ax_rep_get_in(o, sec, "extracted_share", 0, 1, path, &r->extracted_share));
    double eps = 1e-9 * (r->max > 1 ? r->max : 1);
    if (r->min > r->median + eps || r->median > r->max + eps || r->min > r->mean + eps ||
        r->mean > r->max + eps)
        return ax_rep_damaged(path, "memscan exposure",
                              "%s: exposure min %g, median %g, mean %g, max %g are not ordered",
                              sec, r->min, r->median, r->mean, r->max);
    if (fabs(r->extracted_share * (double)r->canaries - (double)r->extracted) > 1e-6)
        return ax_rep_damaged(path, "memscan exposure",
                              "%s.extracted_share = %g disagrees with %lld/%lld extracted", sec,
                              r->extracted_share, (long long)r->extracted, (long long)r->canaries);
    return AX_OK;
}

ax_status ax_rep_parse_exposure(ax_arena *a, const ax_json *v, const char *path,
                                ax_rep_exposure *e) {
    const ax_json *cfg, *by = ax_json_get(v, "by_repeats");
    const char *s;
    AX_CHECK(ax_rep_get_obj(v, "config", path, &cfg));
    AX_CHECK(ax_json_get_str(cfg, "format", path, &s));
    e->format = ax_arena_str(a, s);
    AX_CHECK(ax_json_get_str(cfg, "method", path, &s));
    if (strcmp(s, "exact") && strcmp(s, "estimate"))
        return ax_rep_damaged(path, "memscan exposure",
                              "config.method is neither \"exact\" nor \"estimate\"");
    e->method = ax_arena_str(a, s);
    AX_CHECK(ax_rep_get_in(cfg, "config", "space", 1, 1e300, path, &e->space));
    AX_CHECK(
        ax_rep_get_int(cfg, "config", "candidates", 0, AX_REP_MAX_COUNT, path, &e->candidates));
    AX_CHECK(ax_rep_get_in(v, "", "max_exposure", 0, 1000, path, &e->max_exposure));
    if (fabs(e->max_exposure - log2(e->space)) > 1e-9 * (e->max_exposure > 1 ? e->max_exposure : 1))
        return ax_rep_damaged(path, "memscan exposure",
                              "max_exposure = %g is not log2(config.space) = %g", e->max_exposure,
                              log2(e->space));
    AX_CHECK(exp_row(ax_json_get(v, "overall"), "overall", e->max_exposure, path, &e->overall));
    if (!by || by->type != AX_JSON_ARR || by->n == 0 || by->n > 100000)
        return ax_errorf(AX_ERR_CORRUPT, "%s: by_repeats is missing or not a non-empty array",
                         path);
    if (!(e->rows = ax_arena_alloc(a, by->n * sizeof *e->rows))) return ax_rep_nomem();
    int64_t canaries = 0, extracted = 0;
    for (size_t k = 0; k < by->n; k++) {
        char sec[64];
        ax_rep_exp_row *r = &e->rows[k];
        snprintf(sec, sizeof sec, "by_repeats[%zu]", k);
        if (by->items[k]->type == AX_JSON_OBJ)
            AX_CHECK(ax_rep_get_int(by->items[k], sec, "repeats", 1, AX_REP_MAX_COUNT, path,
                                    &r->repeats));
        AX_CHECK(exp_row(by->items[k], sec, e->max_exposure, path, r));
        e->n_rows++;
        if (k && r->repeats <= e->rows[k - 1].repeats)
            return ax_rep_damaged(path, "memscan exposure", "%s.repeats = %lld does not ascend",
                                  sec, (long long)r->repeats);
        canaries += r->canaries, extracted += r->extracted;
    }
    if (canaries != e->overall.canaries || extracted != e->overall.extracted)
        return ax_rep_damaged(path, "memscan exposure",
                              "by_repeats counts %lld canaries (%lld extracted) but overall says "
                              "%lld (%lld)",
                              (long long)canaries, (long long)extracted,
                              (long long)e->overall.canaries, (long long)e->overall.extracted);
    return AX_OK;
}

typedef struct {
    ax_arena *a;
    ax_rep_exposure *e;
    int keep_secrets;
    double *sum; /* exposure sum per row, to check the table's means */
} canary_ctx;

static ax_status canary_line(const ax_json *row, const char *what, void *ctx) {
    canary_ctx *c = ctx;
    ax_rep_exposure *e = c->e;
    if (e->n_canary >= e->overall.canaries)
        return ax_errorf(AX_ERR_MISMATCH,
                         "%s: more canaries than the %lld %s counts; they do not belong together: "
                         "rerun memscan exposure",
                         what, (long long)e->overall.canaries, e->file);
    ax_rep_canary *k = &e->canary[e->n_canary];
    const ax_json *ex = ax_json_get(row, "extracted");
    const char *secret;
    AX_CHECK(ax_rep_get_int(row, "", "id", 0, AX_REP_MAX_COUNT, what, &k->id));
    AX_CHECK(ax_rep_get_int(row, "", "repeats", 1, AX_REP_MAX_COUNT, what, &k->repeats));
    AX_CHECK(ax_rep_get_in(row, "", "exposure", 0,
                           e->max_exposure + 1e-9 * (e->max_exposure > 1 ? e->max_exposure : 1),
                           what, &k->exposure));
    if (!ex || ex->type != AX_JSON_BOOL)
        return ax_errorf(AX_ERR_CORRUPT, "%s: extracted is missing or not true/false", what);
    AX_CHECK(ax_json_get_str(row, "secret", what, &secret));
    k->extracted = ex->num != 0;
    int at = 0;
    while (at < e->n_rows && e->rows[at].repeats != k->repeats) at++;
    if (at == e->n_rows)
        return ax_errorf(AX_ERR_MISMATCH,
                         "%s: a canary with %lld repeats, a count %s has no row for; they do not "
                         "belong together: rerun memscan exposure",
                         what, (long long)k->repeats, e->file);
    c->sum[at] += k->exposure;
    e->n_canary++;
    if (c->keep_secrets) {
        const ax_json *g = ax_json_get(row, "generated_text");
        k->secret = ax_arena_str(c->a, secret);
        k->generated_text = ax_arena_str(c->a, g && g->type == AX_JSON_STR ? g->str : NULL);
    }
    return AX_OK;
}

ax_status ax_rep_read_exposure_samples(ax_arena *a, ax_rep_exposure *e, int keep_secrets) {
    canary_ctx c = {a, e, keep_secrets, ax_arena_alloc(a, (size_t)e->n_rows * sizeof(double))};
    e->canary = ax_arena_alloc(a, (size_t)e->overall.canaries * sizeof *e->canary);
    if (!c.sum || !e->canary) return ax_rep_nomem();
    ax_status st = ax_rep_each_jsonl(e->samples_file, canary_line, &c);
    if (st == AX_OK && e->n_canary != e->overall.canaries)
        st = ax_errorf(AX_ERR_MISMATCH,
                       "%s has %lld canaries but %s counts %lld: they do not belong together; "
                       "rerun memscan exposure",
                       e->samples_file, (long long)e->n_canary, e->file,
                       (long long)e->overall.canaries);
    for (int k = 0; st == AX_OK && k < e->n_rows; k++) {
        const ax_rep_exp_row *r = &e->rows[k];
        int64_t n = 0, ext = 0;
        for (int64_t i = 0; i < e->n_canary; i++)
            if (e->canary[i].repeats == r->repeats) n++, ext += e->canary[i].extracted;
        double mean = n ? c.sum[k] / (double)n : 0;
        if (n != r->canaries || ext != r->extracted ||
            fabs(mean - r->mean) > 1e-6 * (r->mean > 1 ? r->mean : 1))
            st = ax_errorf(AX_ERR_MISMATCH,
                           "%s: by_repeats[%d] (repeats %lld) says %lld canaries, %lld extracted, "
                           "mean exposure %g, but %s holds %lld, %lld, %g; they do not belong "
                           "together: rerun memscan exposure",
                           e->file, k, (long long)r->repeats, (long long)r->canaries,
                           (long long)r->extracted, r->mean, e->samples_file, (long long)n,
                           (long long)ext, mean);
    }
    return st;
}
