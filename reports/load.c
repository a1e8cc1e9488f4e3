/* Reads scan.json / regurgitation.json (schema axmem-scan v1), samples.jsonl, metrics.jsonl
 * and the memscan index sidecar into an ax_report. Every failure names the file. JSONL files
 * are streamed line by line: training logs of long runs are large. */
#include "lib/fsutil.h"
#include "lib/json.h"
#include "reports/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCAN_SCHEMA "axmem-scan"
#define SCAN_VERSION 1
#define INDEX_SCHEMA "axmem.memscan.index/"

static char *dup_str(const char *s) {
    return s ? strdup(s) : NULL;
}

static ax_status nomem(void) {
    return ax_errorf(AX_ERR_NOMEM, "out of memory reading reports");
}

static char *join(const char *dir, const char *name) {
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s", dir, name);
    return p;
}

static ax_status read_json(const char *path, ax_json **out) {
    char *text = NULL;
    size_t len = 0;
    AX_CHECK(ax_read_file(path, &text, &len));
    ax_status st = ax_json_parse(text, len, path, out);
    free(text);
    return st;
}

/* obj.key as an object; missing or wrong type is corrupt input named by path */
static ax_status get_obj(const ax_json *obj, const char *key, const char *path,
                         const ax_json **out) {
    *out = ax_json_get(obj, key);
    if (!*out || (*out)->type != AX_JSON_OBJ)
        return ax_errorf(AX_ERR_CORRUPT, "%s: \"%s\" is missing or not an object", path, key);
    return AX_OK;
}

static ax_status get_stat(const ax_json *metrics, const char *key, const char *path,
                          ax_rep_stat *s) {
    const ax_json *o, *ci;
    AX_CHECK(get_obj(metrics, key, path, &o));
    AX_CHECK(ax_json_get_num(o, "mean", path, &s->mean));
    ci = ax_json_get(o, "ci95");
    if (!ci || ci->type != AX_JSON_ARR || ci->n != 2 || ci->items[0]->type != AX_JSON_NUM ||
        ci->items[1]->type != AX_JSON_NUM)
        return ax_errorf(AX_ERR_CORRUPT, "%s: metrics.%s.ci95 is not [low, high]", path, key);
    s->lo = ci->items[0]->num, s->hi = ci->items[1]->num;
    return AX_OK;
}

static int64_t opt_i64(const ax_json *o, const char *key, int64_t dflt) {
    const ax_json *v = ax_json_get(o, key);
    return v && v->type == AX_JSON_NUM ? (int64_t)v->num : dflt;
}

static void ident_free(ax_rep_ident *id) {
    free(id->ckpt_path), free(id->goldfish), free(id->ds_path), free(id->ds_xxh3);
}

/* checks schema and version, returns the kind and the identity blocks */
static ax_status scan_header(const ax_json *v, const char *path, const char **kind,
                             ax_rep_ident *id) {
    const ax_json *schema = ax_json_get(v, "schema"), *ver = ax_json_get(v, "version");
    if (!schema || schema->type != AX_JSON_STR || strcmp(schema->str, SCAN_SCHEMA))
        return ax_errorf(AX_ERR_MISMATCH,
                         "%s: not an axmem scan file (schema %s%s%s, expected \"%s\"); pass the "
                         "scan.json or regurgitation.json that axmem memscan wrote",
                         path, schema && schema->type == AX_JSON_STR ? "\"" : "",
                         schema && schema->type == AX_JSON_STR ? schema->str : "missing",
                         schema && schema->type == AX_JSON_STR ? "\"" : "", SCAN_SCHEMA);
    if (!ver || ver->type != AX_JSON_NUM)
        return ax_errorf(AX_ERR_CORRUPT, "%s: \"version\" is missing or not a number", path);
    if (ver->num != SCAN_VERSION)
        return ax_errorf(AX_ERR_MISMATCH,
                         "%s: axmem-scan version %g is not supported (this axmem reads version "
                         "%d); rescan with this axmem or report with the axmem that wrote it",
                         path, ver->num, SCAN_VERSION);
    AX_CHECK(ax_json_get_str(v, "kind", path, kind));
    const ax_json *ck, *ds;
    const char *s;
    AX_CHECK(get_obj(v, "checkpoint", path, &ck));
    AX_CHECK(get_obj(v, "dataset", path, &ds));
    AX_CHECK(ax_json_get_str(ck, "path", path, &s));
    id->ckpt_path = dup_str(s);
    AX_CHECK(ax_json_get_i64(ck, "step", path, &id->step));
    const ax_json *gf = ax_json_get(ck, "goldfish");
    id->goldfish = dup_str(gf && gf->type == AX_JSON_STR ? gf->str : "none");
    AX_CHECK(ax_json_get_str(ds, "path", path, &s));
    id->ds_path = dup_str(s);
    AX_CHECK(ax_json_get_str(ds, "xxh3", path, &s));
    id->ds_xxh3 = dup_str(s);
    AX_CHECK(ax_json_get_i64(ds, "docs", path, &id->ds_docs));
    AX_CHECK(ax_json_get_i64(ds, "tokens", path, &id->ds_tokens));
    if (!id->ckpt_path || !id->goldfish || !id->ds_path || !id->ds_xxh3) return nomem();
    return AX_OK;
}

static ax_status parse_probe(const ax_json *v, const char *path, ax_rep_probe *p) {
    const ax_json *cfg, *m, *tables = ax_json_get(v, "tables");
    AX_CHECK(get_obj(v, "config", path, &cfg));
    AX_CHECK(get_obj(v, "metrics", path, &m));
    p->prefix = opt_i64(cfg, "prefix", 0);
    p->suffix = opt_i64(cfg, "suffix", 0);
    AX_CHECK(get_stat(m, "exact_match_rate", path, &p->exact));
    AX_CHECK(get_stat(m, "token_accuracy", path, &p->tok_acc));
    AX_CHECK(get_stat(m, "rouge_l", path, &p->rouge_l));
    AX_CHECK(ax_json_get_num(m, "matched_prefix_mean", path, &p->mp_mean));
    const ax_json *h = ax_json_get(tables, "matched_prefix_hist");
    if (h && h->type == AX_JSON_ARR && h->n) {
        p->mp_hist = calloc(h->n, sizeof(int64_t));
        if (!p->mp_hist) return nomem();
        p->n_mp_hist = (int)h->n;
        for (size_t k = 0; k < h->n; k++) {
            if (h->items[k]->type != AX_JSON_NUM)
                return ax_errorf(AX_ERR_CORRUPT,
                                 "%s: tables.matched_prefix_hist[%zu] is not a "
                                 "number",
                                 path, k);
            p->mp_hist[k] = (int64_t)h->items[k]->num;
            p->n += p->mp_hist[k];
        }
        p->n_exact = p->mp_hist[h->n - 1]; /* matched all suffix tokens = exact match */
    } else {                               /* no histogram: the rate times the documents probed */
        int64_t want = opt_i64(cfg, "samples", 0), elig = opt_i64(cfg, "eligible_docs", want);
        p->n = want < elig ? want : elig;
        p->n_exact = (int64_t)llround(p->exact.mean * (double)p->n);
    }
    const ax_json *d = ax_json_get(tables, "by_duplication");
    if (d && d->type == AX_JSON_ARR && d->n) {
        p->dup = calloc(d->n, sizeof *p->dup);
        if (!p->dup) return nomem();
        p->n_dup = (int)d->n;
        for (size_t k = 0; k < d->n; k++) {
            const char *b;
            double rate;
            AX_CHECK(ax_json_get_str(d->items[k], "bucket", path, &b));
            AX_CHECK(ax_json_get_i64(d->items[k], "samples", path, &p->dup[k].samples));
            AX_CHECK(ax_json_get_num(d->items[k], "exact_match_rate", path, &rate));
            p->dup[k].exact_match_rate = rate;
            if (!(p->dup[k].bucket = strdup(b))) return nomem();
        }
    }
    return AX_OK;
}

static ax_status parse_regurg(const ax_json *v, const char *path, ax_rep_regurg *g) {
    const ax_json *cfg, *m, *tables = ax_json_get(v, "tables");
    AX_CHECK(get_obj(v, "config", path, &cfg));
    AX_CHECK(get_obj(v, "metrics", path, &m));
    g->n = opt_i64(cfg, "n", 0);
    g->samples = opt_i64(cfg, "samples", 0);
    g->length = opt_i64(cfg, "length", 0);
    AX_CHECK(ax_json_get_num(m, "frac_with_verbatim_span", path, &g->frac_span));
    AX_CHECK(ax_json_get_num(m, "mean_longest_span", path, &g->mean_span));
    AX_CHECK(ax_json_get_i64(m, "max_longest_span", path, &g->max_span));
    const ax_json *h = ax_json_get(tables, "longest_span_hist");
    if (h && h->type == AX_JSON_OBJ && h->n) {
        g->hist_labels = calloc(h->n, sizeof(char *));
        g->hist = calloc(h->n, sizeof(int64_t));
        if (!g->hist_labels || !g->hist) return nomem();
        g->n_hist = (int)h->n;
        for (size_t k = 0; k < h->n; k++) {
            if (h->items[k]->type != AX_JSON_NUM)
                return ax_errorf(AX_ERR_CORRUPT, "%s: tables.longest_span_hist.%s is not a number",
                                 path, h->keys[k]);
            if (!(g->hist_labels[k] = strdup(h->keys[k]))) return nomem();
            g->hist[k] = (int64_t)h->items[k]->num;
        }
    }
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

/* one samples.jsonl row into the top-N list (kept sorted, best first) */
static ax_status take_sample(const ax_json *row, const char *what, ax_rep_probe *p) {
    ax_rep_sample s = {0};
    double acc = 0;
    const ax_json *ex = ax_json_get(row, "exact");
    AX_CHECK(ax_json_get_i64(row, "doc", what, &s.doc));
    AX_CHECK(ax_json_get_i64(row, "offset", what, &s.offset));
    AX_CHECK(ax_json_get_i64(row, "matched_prefix", what, &s.matched_prefix));
    if (ax_json_get(row, "token_accuracy"))
        AX_CHECK(ax_json_get_num(row, "token_accuracy", what, &acc));
    s.token_accuracy = acc;
    s.exact = ex && ex->type == AX_JSON_BOOL && ex->num != 0;
    int pos = p->n_top;
    while (pos > 0 && ranks_above(&s, &p->top[pos - 1])) pos--;
    if (pos >= AX_REP_TOP) return AX_OK;
    const char *tt = opt_text(row, "truth_text"), *gt = opt_text(row, "generated_text");
    if ((tt && !(s.truth_text = strdup(tt))) || (gt && !(s.generated_text = strdup(gt)))) {
        sample_free(&s);
        return nomem();
    }
    if (p->n_top == AX_REP_TOP)
        sample_free(&p->top[AX_REP_TOP - 1]);
    else
        p->n_top++;
    memmove(&p->top[pos + 1], &p->top[pos], sizeof s * (size_t)(p->n_top - 1 - pos));
    p->top[pos] = s;
    return AX_OK;
}

typedef ax_status (*line_fn)(const ax_json *row, const char *what, void *ctx);

/* Calls fn on each non-blank line of a JSONL file; errors name "path line N". */
static ax_status each_jsonl(const char *path, line_fn fn, void *ctx) {
    FILE *f = fopen(path, "r");
    if (!f) return ax_errorf(AX_ERR_IO, "cannot open %s", path);
    char *line = NULL, what[1100];
    size_t cap = 0;
    ssize_t len;
    long lineno = 0;
    ax_status st = AX_OK;
    while (st == AX_OK && (len = getline(&line, &cap, f)) >= 0) {
        lineno++;
        size_t k = 0;
        while (k < (size_t)len &&
               (line[k] == ' ' || line[k] == '\t' || line[k] == '\n' || line[k] == '\r'))
            k++;
        if (k == (size_t)len) continue;
        snprintf(what, sizeof what, "%s line %ld", path, lineno);
        ax_json *row = NULL;
        st = ax_json_parse(line, (size_t)len, what, &row);
        if (st == AX_OK && row->type != AX_JSON_OBJ)
            st = ax_errorf(AX_ERR_CORRUPT, "%s: not a JSON object", what);
        if (st == AX_OK) st = fn(row, what, ctx);
        ax_json_free(row);
    }
    if (st == AX_OK && ferror(f)) st = ax_errorf(AX_ERR_IO, "read error in %s", path);
    free(line);
    fclose(f);
    return st;
}

static ax_status sample_line(const ax_json *row, const char *what, void *ctx) {
    ax_rep_probe *p = ctx;
    p->n_sample_rows++;
    return take_sample(row, what, p);
}

static ax_status push2(double **a, double **b, int64_t *n, int64_t *cap, double x, double y) {
    if (*n == *cap) {
        int64_t c = *cap ? *cap * 2 : 256;
        double *na = realloc(*a, sizeof(double) * (size_t)c);
        if (!na) return nomem();
        *a = na;
        double *nb = realloc(*b, sizeof(double) * (size_t)c);
        if (!nb) return nomem();
        *b = nb, *cap = c;
    }
    (*a)[*n] = x, (*b)[*n] = y, (*n)++;
    return AX_OK;
}

static ax_status metrics_line(const ax_json *row, const char *what, void *ctx) {
    ax_rep_train *t = ctx;
    double step, loss;
    AX_CHECK(ax_json_get_num(row, "step", what, &step));
    AX_CHECK(ax_json_get_num(row, "loss", what, &loss));
    AX_CHECK(push2(&t->step, &t->loss, &t->n, &t->cap, step, loss));
    const ax_json *vl = ax_json_get(row, "val_loss");
    if (vl && vl->type == AX_JSON_NUM)
        AX_CHECK(push2(&t->val_step, &t->val_loss, &t->n_val, &t->cap_val, step, vl->num));
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

/* Loads one scan file into the run, by its kind. */
static ax_status load_scan(ax_rep_run *run, const char *path, const char *want_kind) {
    ax_json *v = NULL;
    ax_rep_ident id = {0};
    const char *kind = NULL;
    ax_status st;
    AX_CHECK_GOTO(read_json(path, &v), out);
    AX_CHECK_GOTO(scan_header(v, path, &kind, &id), out);
    if (want_kind && strcmp(kind, want_kind)) {
        st = ax_errorf(AX_ERR_MISMATCH, "%s: kind \"%s\", expected \"%s\" for this file name", path,
                       kind, want_kind);
        goto out;
    }
    int probe = !strcmp(kind, "extraction-probe");
    if (!probe && strcmp(kind, "regurgitation-scan")) {
        st = ax_errorf(AX_ERR_UNSUPPORTED,
                       "%s: scan kind \"%s\" is not reported (known: extraction-probe, "
                       "regurgitation-scan)",
                       path, kind);
        goto out;
    }
    if ((probe && run->probe) || (!probe && run->regurg)) {
        st = ax_errorf(AX_ERR_ARG, "run '%s' has two %s scans (%s and %s); give each its own label",
                       run->label, kind, probe ? run->probe->file : run->regurg->file, path);
        goto out;
    }
    if (probe) {
        ax_rep_probe *p = calloc(1, sizeof *p);
        if (!p || !(p->file = strdup(path))) {
            free(p);
            st = nomem();
            goto out;
        }
        run->probe = p, p->id = id;
        memset(&id, 0, sizeof id);
        AX_CHECK_GOTO(parse_probe(v, path, p), out);
    } else {
        ax_rep_regurg *g = calloc(1, sizeof *g);
        if (!g || !(g->file = strdup(path))) {
            free(g);
            st = nomem();
            goto out;
        }
        run->regurg = g, g->id = id;
        memset(&id, 0, sizeof id);
        AX_CHECK_GOTO(parse_regurg(v, path, g), out);
    }
    if (run->probe && run->regurg && !run->warning &&
        !same_ident(&run->probe->id, &run->regurg->id)) {
        char w[2048];
        snprintf(w, sizeof w,
                 "the probe (%s) and the regurgitation scan (%s) name different checkpoints or "
                 "datasets",
                 run->probe->file, run->regurg->file);
        run->warning = strdup(w);
    }
out:
    ident_free(&id);
    ax_json_free(v);
    return st;
}

static ax_status load_dir(ax_rep_run *run, const char *dir) {
    if (!ax_path_exists(dir))
        return ax_errorf(AX_ERR_IO,
                         "run '%s': %s does not exist; pass a directory written by "
                         "axmem memscan probe/generate",
                         run->label, dir);
    static const char *names[] = {"scan.json", "regurgitation.json", "samples.jsonl",
                                  "metrics.jsonl"};
    char *p[4];
    ax_status st = AX_OK;
    for (int k = 0; k < 4; k++) p[k] = join(dir, names[k]);
    if (!p[0] || !p[1] || !p[2] || !p[3]) {
        st = nomem();
        goto out;
    }
    if (!ax_path_exists(p[0]) && !ax_path_exists(p[1])) {
        st = ax_errorf(AX_ERR_IO,
                       "run '%s': found neither %s nor %s; point --run at a directory where "
                       "axmem memscan probe/generate wrote its scan, or use --scan LABEL=FILE",
                       run->label, p[0], p[1]);
        goto out;
    }
    if (!(run->dir = strdup(dir))) {
        st = nomem();
        goto out;
    }
    if (ax_path_exists(p[0])) AX_CHECK_GOTO(load_scan(run, p[0], "extraction-probe"), out);
    if (ax_path_exists(p[1])) AX_CHECK_GOTO(load_scan(run, p[1], "regurgitation-scan"), out);
    if (run->probe && ax_path_exists(p[2])) {
        if (!(run->probe->samples_file = strdup(p[2]))) {
            st = nomem();
            goto out;
        }
        AX_CHECK_GOTO(each_jsonl(p[2], sample_line, run->probe), out);
    }
    if (ax_path_exists(p[3])) {
        ax_rep_train *t = calloc(1, sizeof *t);
        if (!t || !(t->file = strdup(p[3]))) {
            free(t);
            st = nomem();
            goto out;
        }
        run->train = t;
        AX_CHECK_GOTO(each_jsonl(p[3], metrics_line, t), out);
    }
out:
    for (int k = 0; k < 4; k++) free(p[k]);
    return st;
}

static ax_status load_index(const char *path, ax_rep_index **out) {
    ax_json *v = NULL;
    ax_status st = AX_OK;
    ax_rep_index *x = calloc(1, sizeof *x);
    if (!x) return nomem();
    *out = x;
    if (!(x->file = strdup(path))) return nomem();
    AX_CHECK(read_json(path, &v));
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
    AX_CHECK_GOTO(ax_json_get_i64(v, "n", path, &x->n), out);
    AX_CHECK_GOTO(ax_json_get_i64(v, "windows", path, &x->windows), out);
    AX_CHECK_GOTO(ax_json_get_i64(v, "distinct_windows", path, &x->distinct), out);
    AX_CHECK_GOTO(get_obj(v, "duplication_histogram", path, &h), out);
    x->labels = calloc(h->n + 1, sizeof(char *));
    x->counts = calloc(h->n + 1, sizeof(int64_t));
    if (!x->labels || !x->counts) {
        st = nomem();
        goto out;
    }
    for (size_t k = 0; k < h->n; k++) {
        if (h->items[k]->type != AX_JSON_NUM) {
            st = ax_errorf(AX_ERR_CORRUPT, "%s: duplication_histogram.%s is not a number", path,
                           h->keys[k]);
            goto out;
        }
        if (!(x->labels[k] = strdup(h->keys[k]))) {
            st = nomem();
            goto out;
        }
        x->counts[k] = (int64_t)h->items[k]->num;
        x->n_hist++;
    }
out:
    ax_json_free(v);
    return st;
}

ax_status ax_rep_load(const ax_report_opts *o, ax_report *r) {
    memset(r, 0, sizeof *r);
    r->text_chars = o->text_chars;
    r->runs = calloc((size_t)(o->n_inputs > 0 ? o->n_inputs : 1), sizeof *r->runs);
    if (!r->runs) return nomem();
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
            if (!(run->label = strdup(in->label))) return nomem();
        }
        if (in->is_file) {
            if (!ax_path_exists(in->path))
                return ax_errorf(AX_ERR_IO, "--scan %s=%s: no such file", in->label, in->path);
            AX_CHECK(load_scan(run, in->path, NULL));
        } else {
            AX_CHECK(load_dir(run, in->path));
        }
    }
    if (o->index) AX_CHECK(load_index(o->index, &r->index));
    return AX_OK;
}

const ax_rep_ident *ax_rep_run_ident(const ax_rep_run *run) {
    return run->probe ? &run->probe->id : run->regurg ? &run->regurg->id : NULL;
}

void ax_rep_free(ax_report *r) {
    for (int i = 0; i < r->n_runs; i++) {
        ax_rep_run *run = &r->runs[i];
        if (run->probe) {
            ax_rep_probe *p = run->probe;
            ident_free(&p->id);
            for (int k = 0; k < p->n_dup; k++) free(p->dup[k].bucket);
            for (int k = 0; k < p->n_top; k++) sample_free(&p->top[k]);
            free(p->file), free(p->mp_hist), free(p->dup), free(p->samples_file), free(p);
        }
        if (run->regurg) {
            ax_rep_regurg *g = run->regurg;
            ident_free(&g->id);
            for (int k = 0; k < g->n_hist; k++) free(g->hist_labels[k]);
            free(g->file), free(g->hist_labels), free(g->hist), free(g);
        }
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
    free(r->title), free(r->headline), free(r->note);
    memset(r, 0, sizeof *r);
}
