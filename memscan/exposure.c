#include "memscan/exposure.h"
#include "lib/core/fsutil.h"
#include "lib/core/json.h"
#include "lib/dist/grid.h"
#include "memscan/privacy_metrics.h"
#include "memscan/score.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the secrets file ---- */

/* a copy of string `key` of o into *out: "" when o has none and `optional` */
static ax_status get_str(const ax_json *o, const char *key, const char *what, int optional,
                         char **out) {
    const char *s = "";
    if (!optional || ax_json_get(o, key)) AX_CHECK(ax_json_get_str(o, key, what, &s));
    return (*out = strdup(s)) ? AX_OK : ax_errorf(AX_ERR_NOMEM, "out of memory reading %s", what);
}

static ax_status get_int(const ax_json *o, const char *key, const char *what, int lo, int hi,
                         int *out) {
    const ax_json *v = ax_json_get(o, key);
    int64_t x;
    if (!v || !ax_json_int_in(v, lo, hi, &x))
        return ax_errorf(AX_ERR_CORRUPT, "%s: \"%s\" must be an integer in %d..%d", what, key, lo,
                         hi);
    *out = (int)x;
    return AX_OK;
}

/* "inserted": [{"doc", "token_pos"}, ...] (optional: a hand-made file may have none) */
static ax_status load_sites(const ax_json *o, const char *what, ax_canary *c) {
    const ax_json *in = ax_json_get(o, "inserted");
    if (!in) return AX_OK;
    if (in->type != AX_JSON_ARR || in->n > (1u << 30))
        return ax_errorf(AX_ERR_CORRUPT, "%s: \"inserted\" must be an array of {doc, token_pos}",
                         what);
    if (in->n && !(c->sites = malloc(sizeof *c->sites * in->n)))
        return ax_errorf(AX_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < in->n; i++) {
        const ax_json *d = ax_json_get(in->items[i], "doc"),
                      *p = ax_json_get(in->items[i], "token_pos");
        int64_t dv, pv;
        if (!d || !p || !ax_json_int_in(d, 0, INT64_MAX, &dv) ||
            !ax_json_int_in(p, 0, INT64_MAX, &pv))
            return ax_errorf(AX_ERR_CORRUPT,
                             "%s: inserted[%zu] needs integer \"doc\" and \"token_pos\"", what, i);
        c->sites[c->n_sites++] = (ax_canary_site){(uint64_t)dv, (uint64_t)pv};
    }
    return AX_OK;
}

static ax_status load_canary(const ax_json *o, const char *what, ax_canary *c) {
    AX_CHECK(get_int(o, "id", what, 0, 1 << 30, &c->id));
    AX_CHECK(get_int(o, "repeats", what, 0, 1 << 30, &c->repeats));
    AX_CHECK(get_int(o, "prefix_tokens", what, 0, 1 << 20, &c->prefix_tokens));
    AX_CHECK(get_str(o, "prefix", what, 0, &c->prefix));
    AX_CHECK(get_str(o, "secret", what, 0, &c->secret));
    const ax_json *t = ax_json_get(o, "tokens");
    if (!t || t->type != AX_JSON_ARR || t->n < 1 || t->n > (1 << 20))
        return ax_errorf(AX_ERR_CORRUPT, "%s: \"tokens\" must be a non-empty array of token ids",
                         what);
    c->n_tokens = (int)t->n;
    if (c->prefix_tokens >= c->n_tokens)
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: prefix_tokens %d leaves no secret token of the %d tokens", what,
                         c->prefix_tokens, c->n_tokens);
    if (!(c->tokens = malloc(sizeof(int32_t) * t->n)))
        return ax_errorf(AX_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < t->n; i++) {
        int64_t x;
        if (!ax_json_int_in(t->items[i], 0, INT32_MAX, &x))
            return ax_errorf(AX_ERR_CORRUPT, "%s: tokens[%zu] is not a token id", what, i);
        c->tokens[i] = (int32_t)x;
    }
    return load_sites(o, what, c);
}

ax_status ax_canary_set_load(const char *path, ax_canary_set *out) {
    memset(out, 0, sizeof *out);
    char *text = NULL, what[600];
    size_t len = 0;
    ax_json *j = NULL;
    ax_status st;
    AX_CHECK_GOTO(ax_read_file_max(path, (size_t)1 << 30, &text, &len), fail);
    AX_CHECK_GOTO(ax_json_parse_advice(text, len, path,
                                       "pass the secrets file `axmem data canaries` wrote", &j),
                  fail);
    if (j->type != AX_JSON_OBJ) {
        st = ax_errorf(AX_ERR_CORRUPT, "%s is not a canary secrets file (a JSON object)", path);
        goto fail;
    }
    AX_CHECK_GOTO(get_str(j, "format", path, 0, &out->format), fail);
    AX_CHECK_GOTO(ax_json_get_num(j, "space", path, &out->space), fail);
    AX_CHECK_GOTO(get_str(j, "tokenizer", path, 1, &out->tokenizer), fail);
    AX_CHECK_GOTO(get_str(j, "dataset", path, 1, &out->dataset), fail);
    /* version 1: the canaries were planted without a lead */
    AX_CHECK_GOTO(get_str(j, "lead", path, 1, &out->lead), fail);
    if (ax_json_get(j, "dataset_xxh3")) { /* version 2: the canaried dataset's identity */
        int64_t docs, toks;
        AX_CHECK_GOTO(ax_json_get_hex64(j, "dataset_xxh3", path, &out->dataset_xxh3), fail);
        AX_CHECK_GOTO(ax_json_get_i64(j, "dataset_docs", path, &docs), fail);
        AX_CHECK_GOTO(ax_json_get_i64(j, "dataset_tokens", path, &toks), fail);
        out->dataset_docs = (uint64_t)docs, out->dataset_tokens = (uint64_t)toks;
        out->has_identity = 1;
    }
    const ax_json *cs = ax_json_get(j, "canaries");
    if (!cs || cs->type != AX_JSON_ARR || cs->n == 0) {
        st = ax_errorf(AX_ERR_CORRUPT, "%s: \"canaries\" must be a non-empty array", path);
        goto fail;
    }
    if (!(out->c = calloc(cs->n, sizeof *out->c))) goto nomem;
    out->n = (int)cs->n;
    for (size_t i = 0; i < cs->n; i++) {
        snprintf(what, sizeof what, "%s canaries[%zu]", path, i);
        AX_CHECK_GOTO(load_canary(cs->items[i], what, &out->c[i]), fail);
    }
    const ax_json *rs = ax_json_get(j, "references");
    if (rs && rs->type == AX_JSON_ARR && rs->n) {
        if (!(out->refs = calloc(rs->n, sizeof *out->refs))) goto nomem;
        for (size_t i = 0; i < rs->n; i++) {
            if (rs->items[i]->type != AX_JSON_STR) {
                st = ax_errorf(AX_ERR_CORRUPT, "%s: references[%zu] is not a string", path, i);
                goto fail;
            }
            if (!(out->refs[out->n_refs++] = strdup(rs->items[i]->str))) goto nomem;
        }
    }
    ax_json_free(j);
    free(text);
    return AX_OK;
nomem:
    st = ax_errorf(AX_ERR_NOMEM, "out of memory reading %s", path);
fail:
    ax_json_free(j);
    free(text);
    ax_canary_set_free(out);
    return st;
}

void ax_canary_set_free(ax_canary_set *s) {
    for (int i = 0; s->c && i < s->n; i++)
        free(s->c[i].prefix), free(s->c[i].secret), free(s->c[i].tokens), free(s->c[i].sites);
    for (int i = 0; i < s->n_refs; i++) free(s->refs[i]);
    free(s->c), free(s->refs), free(s->format), free(s->tokenizer), free(s->dataset);
    free(s->lead);
    memset(s, 0, sizeof *s);
}

/* ---- the plan: candidates and their tokens ---- */

struct ax_exposure_plan {
    ax_canary_format f;
    int secret_len; /* bytes of a secret */
    int exact, T, split;
    long n_items, cap, n_tok, tok_cap;
    int32_t *tok;  /* every item's sequence: end-of-text, then the canary text's tokens */
    long *tok_off; /* [n_items + 1] */
    int *group;    /* [n_items]: the prefix group */
    uint8_t *ref;  /* [n_items]: a candidate other than a canary's secret (estimate mode) */
    long *item_of; /* [canaries]: the item holding its secret */
    int *group_of; /* [canaries]: its prefix group */
    int n_groups;
    long per_group; /* candidates per group */
    int32_t eot;    /* the tokenizer's end-of-text (GPT-NeoX's is 0, axmem's AX_TOK_EOT) */
};

void ax_exposure_plan_free(ax_exposure_plan *p) {
    if (!p) return;
    free(p->tok), free(p->tok_off), free(p->group), free(p->ref);
    free(p->item_of), free(p->group_of);
    free(p);
}
int ax_exposure_plan_T(const ax_exposure_plan *p) {
    return p->T;
}
long ax_exposure_plan_candidates(const ax_exposure_plan *p) {
    return p->per_group;
}
int ax_exposure_plan_exact(const ax_exposure_plan *p) {
    return p->exact;
}

/* the tokens of prefix + secret, encoded together or each on its own ([n]: malloc'd) */
static ax_status encode_pair(const ax_tokenizer_t *tok, const char *prefix, const char *secret,
                             int split, int32_t **out, size_t *n, size_t *n_prefix) {
    *out = NULL, *n = *n_prefix = 0;
    if (!split) {
        size_t lp = strlen(prefix), ls = strlen(secret);
        char *both = malloc(lp + ls + 1);
        if (!both) return ax_errorf(AX_ERR_NOMEM, "out of memory");
        memcpy(both, prefix, lp), memcpy(both + lp, secret, ls + 1);
        ax_status st = ax_tokenizer_encode(tok, (const uint8_t *)both, lp + ls, out, n);
        free(both);
        return st;
    }
    int32_t *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    ax_status st = ax_tokenizer_encode(tok, (const uint8_t *)prefix, strlen(prefix), &a, &na);
    if (st == AX_OK)
        st = ax_tokenizer_encode(tok, (const uint8_t *)secret, strlen(secret), &b, &nb);
    if (st == AX_OK && !(*out = malloc(sizeof(int32_t) * (na + nb + 1))))
        st = ax_errorf(AX_ERR_NOMEM, "out of memory");
    if (st == AX_OK) {
        memcpy(*out, a, sizeof(int32_t) * na), memcpy(*out + na, b, sizeof(int32_t) * nb);
        *n = na + nb, *n_prefix = na;
    }
    free(a), free(b);
    return st;
}

static int same_tokens(const int32_t *a, size_t na, const int32_t *b, size_t nb) {
    return na == nb && !memcmp(a, b, sizeof(int32_t) * na);
}

/* lead + prefix (malloc'd; NULL when out of memory) */
static char *lead_prefix(const char *lead, const char *prefix) {
    size_t a = strlen(lead), b = strlen(prefix);
    char *t = malloc(a + b + 1);
    if (t) memcpy(t, lead, a), memcpy(t + a, prefix, b + 1);
    return t;
}

/* appends one item: end-of-text, then the tokens of the canary text with secret cand */
static ax_status add_item(ax_exposure_plan *p, const ax_tokenizer_t *tok, const char *head,
                          int group, const char *cand, int ref) {
    int32_t *t = NULL;
    size_t n, np;
    AX_CHECK(encode_pair(tok, head, cand, p->split, &t, &n, &np));
    if (p->n_items + 1 >= p->cap) {
        long cap = p->cap ? 2 * p->cap : 1024;
        long *o = realloc(p->tok_off, sizeof(long) * (size_t)(cap + 1));
        if (o) p->tok_off = o;
        int *g = realloc(p->group, sizeof(int) * (size_t)cap);
        if (g) p->group = g;
        uint8_t *r = realloc(p->ref, (size_t)cap);
        if (r) p->ref = r;
        if (!o || !g || !r) return free(t), ax_errorf(AX_ERR_NOMEM, "out of memory");
        p->cap = cap;
    }
    if (p->n_tok + (long)n + 1 > p->tok_cap) {
        long cap = (p->tok_cap ? 2 * p->tok_cap : 16384) + (long)n + 1;
        int32_t *q = realloc(p->tok, sizeof(int32_t) * (size_t)cap);
        if (!q) return free(t), ax_errorf(AX_ERR_NOMEM, "out of memory");
        p->tok = q, p->tok_cap = cap;
    }
    long i = p->n_items++;
    p->tok_off[i] = p->n_tok;
    p->tok[p->n_tok++] = ax_tokenizer_eot(tok);
    memcpy(p->tok + p->n_tok, t, sizeof(int32_t) * n);
    p->n_tok += (long)n;
    p->tok_off[i + 1] = p->n_tok;
    p->group[i] = group, p->ref[i] = (uint8_t)ref;
    if ((int)n > p->T) p->T = (int)n;
    free(t);
    return AX_OK;
}

/* lead + prefix + secret of every canary encoded together, or apart, must give its tokens */
static ax_status pick_scheme(ax_exposure_plan *p, const ax_canary_set *s,
                             const ax_tokenizer_t *tok) {
    for (int split = 0; split < 2; split++) {
        int ok = 1;
        for (int k = 0; ok && k < s->n; k++) {
            const ax_canary *c = &s->c[k];
            int32_t *t = NULL;
            size_t n, np;
            char *head = lead_prefix(s->lead, c->prefix);
            if (!head) return ax_errorf(AX_ERR_NOMEM, "out of memory");
            ax_status st = encode_pair(tok, head, c->secret, split, &t, &n, &np);
            free(head);
            AX_CHECK(st);
            ok = same_tokens(t, n, c->tokens, (size_t)c->n_tokens);
            free(t);
        }
        if (ok) {
            p->split = split;
            return AX_OK;
        }
    }
    return ax_errorf(AX_ERR_MISMATCH,
                     "the canaries' tokens are not the tokenizer's encoding of their text (lead + "
                     "prefix + secret); pass the tokenizer the canaries were made with "
                     "(--tokenizer)");
}

ax_status ax_exposure_plan_build(const ax_canary_set *s, const ax_tokenizer_t *tok,
                                 const ax_exposure_config *c, ax_exposure_plan **out) {
    *out = NULL;
    ax_exposure_plan *p = calloc(1, sizeof *p);
    char *cand = NULL, *head = NULL;
    int *grp = NULL, n_groups = 0;
    ax_status st;
    if (!p || !(grp = p->group_of = malloc(sizeof(int) * (size_t)s->n)) ||
        !(p->item_of = malloc(sizeof(long) * (size_t)s->n))) {
        st = ax_errorf(AX_ERR_NOMEM, "out of memory");
        goto fail;
    }
    p->eot = ax_tokenizer_eot(tok);
    if (ax_canary_format_parse(s->format, &p->f) != AX_OK) {
        ax_error_clear(); /* its message names --format, of another command */
        st = ax_errorf(AX_ERR_CORRUPT,
                       "the canaries' format '%s' is not a canary format; pass the secrets file "
                       "`axmem data canaries` wrote",
                       s->format);
        goto fail;
    }
    if (fabs(p->f.space - s->space) > 0.5 + 1e-9 * s->space) {
        st = ax_errorf(AX_ERR_CORRUPT,
                       "the canaries' format '%s' forms %.0f strings but the file says space %.0f",
                       s->format, p->f.space, s->space);
        goto fail;
    }
    if (!(cand = malloc(AX_CANARY_MAX_TEXT))) {
        st = ax_errorf(AX_ERR_NOMEM, "out of memory");
        goto fail;
    }
    ax_canary_secret_nth(&p->f, 0, cand);
    p->secret_len = (int)strlen(cand);
    p->exact = p->f.space <= c->exact_max;
    AX_CHECK_GOTO(pick_scheme(p, s, tok), fail);
    for (int k = 0; k < s->n; k++) { /* canaries with the same prefix share their candidates */
        const ax_canary *ck = &s->c[k];
        if ((int)strlen(ck->secret) != p->secret_len) {
            st = ax_errorf(AX_ERR_CORRUPT, "canary %d's secret is not of the format '%s'", ck->id,
                           s->format);
            goto fail;
        }
        grp[k] = -1;
        for (int q = 0; q < k && grp[k] < 0; q++)
            if (!strcmp(s->c[q].prefix, ck->prefix)) grp[k] = grp[q];
        if (grp[k] < 0) grp[k] = n_groups++;
        p->item_of[k] = -1;
    }
    p->n_groups = n_groups;
    for (int gi = 0; gi < n_groups; gi++) {
        int first = 0;
        while (grp[first] != gi) first++;
        free(head);
        if (!(head = lead_prefix(s->lead, s->c[first].prefix))) {
            st = ax_errorf(AX_ERR_NOMEM, "out of memory");
            goto fail;
        }
        long start = p->n_items;
        if (p->exact) {
            for (uint64_t idx = 0; idx < (uint64_t)p->f.space; idx++) {
                ax_canary_secret_nth(&p->f, idx, cand);
                for (int k = 0; k < s->n; k++)
                    if (grp[k] == gi && !strcmp(cand, s->c[k].secret)) p->item_of[k] = p->n_items;
                AX_CHECK_GOTO(add_item(p, tok, head, gi, cand, 1), fail);
            }
        } else {
            int n_rand = c->candidates > 0 || s->n_refs ? c->candidates : 1000;
            for (int r = 0; r < s->n_refs; r++) {
                if ((int)strlen(s->refs[r]) != p->secret_len) {
                    st = ax_errorf(AX_ERR_CORRUPT, "reference %d is not of the format '%s'", r,
                                   s->format);
                    goto fail;
                }
                AX_CHECK_GOTO(add_item(p, tok, head, gi, s->refs[r], 1), fail);
            }
            for (int r = 0; r < n_rand; r++) {
                ax_canary_secret_random(&p->f, c->seed, 7, (uint64_t)r, cand);
                int inserted = 0; /* a candidate that is a canary's secret is no reference */
                for (int k = 0; k < s->n; k++) inserted |= !strcmp(cand, s->c[k].secret);
                if (!inserted) AX_CHECK_GOTO(add_item(p, tok, head, gi, cand, 1), fail);
            }
            p->per_group = p->n_items - start;
            for (int k = 0; k < s->n; k++)
                if (grp[k] == gi) {
                    p->item_of[k] = p->n_items;
                    AX_CHECK_GOTO(add_item(p, tok, head, gi, s->c[k].secret, 0), fail);
                }
        }
        if (p->exact) p->per_group = p->n_items - start;
    }
    for (int k = 0; k < s->n; k++) {
        if (p->item_of[k] < 0) {
            st = ax_errorf(AX_ERR_CORRUPT, "canary %d's secret is not of the format '%s'",
                           s->c[k].id, s->format);
            goto fail;
        }
        if (s->c[k].n_tokens > p->T) p->T = s->c[k].n_tokens;
    }
    if (!p->exact && p->per_group < 3) { /* a skew-normal has 3 parameters */
        st = ax_errorf(AX_ERR_ARG,
                       "the space (%.0f) is above --exact-max and there are %ld reference "
                       "candidates; pass --candidates N (N >= 3; 1000 or more for a stable fit) "
                       "to estimate the exposure",
                       p->f.space, p->per_group);
        goto fail;
    }
    free(cand), free(head);
    *out = p;
    return AX_OK;
fail:
    free(cand), free(head);
    ax_exposure_plan_free(p);
    return st;
}

/* ---- scoring and greedy decoding ---- */

/* Greedy continuation of every canary's prompt (end-of-text + prefix tokens) for its secret's
 * token count, `batch` canaries at a time, every rank decoding all of them (a few dozen). */
static ax_status decode_all(ax_model_t *m, const ax_canary_set *s, int batch, int T, int32_t eot,
                            ax_exposure_row *rows) {
    int32_t *tok = malloc(sizeof(int32_t) * (size_t)batch);
    ax_status st = tok ? AX_OK : ax_errorf(AX_ERR_NOMEM, "out of memory");
    for (int b0 = 0; st == AX_OK && b0 < s->n; b0 += batch) {
        int B = s->n - b0 < batch ? s->n - b0 : batch, end = 0;
        for (int j = 0; j < B; j++) { /* positions read: prompt 1 + P, then S - 1 choices */
            const ax_canary *c = &s->c[b0 + j];
            int e = 1 + c->prefix_tokens + (c->n_tokens - c->prefix_tokens) - 1;
            end = e > end ? e : end;
        }
        if (end > T) {
            st = ax_errorf(AX_ERR_INTERNAL, "canary decode needs %d positions, the model %d", end,
                           T);
            break;
        }
        AX_CHECK_GOTO(ax_model_decode_begin(m, B), done);
        for (int pos = 0; pos < end; pos++) {
            int choose = 0; /* any canary chooses its next token after pos */
            for (int j = 0; j < B; j++) {
                const ax_canary *c = &s->c[b0 + j];
                const ax_exposure_row *r = &rows[b0 + j];
                int Lp = 1 + c->prefix_tokens, S = r->n_generated;
                choose |= pos >= Lp - 1;
                tok[j] = pos == 0           ? eot
                         : pos < Lp         ? c->tokens[pos - 1]
                         : pos < Lp + S - 1 ? r->generated[pos - Lp]
                                            : 0; /* past its end: ignored */
            }
            if (!choose) { /* every canary still reads its prompt: no logits wanted */
                ax_model_decode_feed(m, tok, pos);
                continue;
            }
            ax_model_decode_step(m, tok, pos);
            AX_CHECK_GOTO(ax_model_decode_argmax(m, tok), done);
            for (int j = 0; j < B; j++) {
                const ax_canary *c = &s->c[b0 + j];
                ax_exposure_row *r = &rows[b0 + j];
                int k = pos - (1 + c->prefix_tokens) + 1; /* the secret token just chosen */
                if (k >= 0 && k < r->n_generated) r->generated[k] = tok[j];
            }
        }
        AX_CHECK_GOTO(ax_model_status(m), done);
    }
done:
    free(tok);
    return st;
}

/* the candidates of group g other than item `me` (every reference, or in exact mode every
 * string of the space but the secret) into buf; their count */
static long group_others(const ax_exposure_plan *p, const double *ll, int g, long me, double *buf) {
    long no = 0;
    for (long i = 0; i < p->n_items; i++)
        if (i != me && p->group[i] == g && p->ref[i]) buf[no++] = ll[i];
    return no;
}

ax_status ax_exposure_run(ax_model_t *m, const ax_canary_set *s, const ax_exposure_plan *p,
                          const ax_exposure_config *c, ax_exposure_result *out) {
    memset(out, 0, sizeof *out);
    long n = p->n_items;
    const int32_t **ptr = malloc(sizeof *ptr * (size_t)n);
    int *len = malloc(sizeof(int) * (size_t)n);
    double *ll = malloc(sizeof(double) * (size_t)n), *others = malloc(sizeof(double) * (size_t)n);
    ax_score_result sr = {0};
    ax_status st = AX_OK;
    out->n = s->n, out->exact = p->exact, out->n_candidates = p->per_group;
    out->space = p->f.space;
    out->r = calloc((size_t)s->n, sizeof *out->r);
    out->g = calloc((size_t)p->n_groups, sizeof *out->g);
    out->n_groups = p->n_groups;
    if (!ptr || !len || !ll || !others || !out->r || !out->g || n > (1L << 30)) {
        st = ax_errorf(AX_ERR_NOMEM, "out of memory for %ld candidates", n);
        goto done;
    }
    for (long i = 0; i < n; i++)
        ptr[i] = p->tok + p->tok_off[i], len[i] = (int)(p->tok_off[i + 1] - p->tok_off[i]);
    ax_score_opts so = {.T = p->T,
                        .batch = c->batch,
                        .want_dist = 0,
                        .progress = c->progress ? "memscan exposure" : NULL};
    AX_CHECK_GOTO(ax_score_seqs(m, (int)n, ptr, len, &so, &sr), done);
    for (long i = 0; i < n; i++) { /* every target: the whole canary text after end-of-text */
        double a = 0;
        for (long t = sr.off[i]; t < sr.off[i + 1]; t++) a += sr.logp[t];
        ll[i] = a;
    }
    for (int g = 0; g < p->n_groups; g++) { /* per prefix: its candidates, and the fit */
        int first = 0;
        while (p->group_of[first] != g) first++;
        ax_exposure_group *eg = &out->g[g];
        eg->prefix = s->c[first].prefix;
        eg->candidates = p->per_group;
        if (!p->exact)
            AX_CHECK_GOTO(ax_exposure_fit(others, group_others(p, ll, g, -1, others), &eg->fit),
                          done);
    }
    for (int k = 0; k < s->n; k++) {
        ax_exposure_row *r = &out->r[k];
        long me = p->item_of[k];
        r->loglik = ll[me];
        r->group = p->group_of[k];
        if (p->exact) {
            long no = group_others(p, ll, r->group, me, others);
            r->rank = ax_exposure_rank(others, no, r->loglik);
            r->exposure = ax_exposure_from_rank(r->rank, p->f.space);
        } else {
            r->rank = NAN;
            r->exposure = ax_exposure_from_fit(&out->g[r->group].fit, r->loglik, p->f.space);
        }
        r->n_generated = s->c[k].n_tokens - s->c[k].prefix_tokens;
        if (!(r->generated = malloc(sizeof(int32_t) * (size_t)r->n_generated))) {
            st = ax_errorf(AX_ERR_NOMEM, "out of memory");
            goto done;
        }
    }
    AX_CHECK_GOTO(decode_all(m, s, c->batch, p->T, p->eot, out->r), done);
    for (int k = 0; k < s->n; k++)
        out->r[k].extracted = !memcmp(out->r[k].generated, s->c[k].tokens + s->c[k].prefix_tokens,
                                      sizeof(int32_t) * (size_t)out->r[k].n_generated);
done:
    free(ptr), free(len), free(ll), free(others);
    ax_score_result_free(&sr);
    if (st != AX_OK) ax_exposure_result_free(out);
    return st;
}

void ax_exposure_result_free(ax_exposure_result *r) {
    for (int k = 0; r->r && k < r->n; k++) free(r->r[k].generated);
    free(r->r), free(r->g);
    memset(r, 0, sizeof *r);
}

/* ---- which planted copies training read ---- */

static ax_status reads_unknown(ax_exposure_reads *r, const char *why) {
    r->known = 0;
    snprintf(r->why, sizeof r->why, "%s", why);
    free(r->read);
    r->read = NULL;
    return AX_OK;
}

/* 1 if the copy at (doc, pos) of n tokens is all training targets (see exposure.h) */
static int copy_read(const ax_exposure_reads *r, const ax_axd_t *ds, ax_canary_site at, int n) {
    uint64_t T = (uint64_t)r->seq_len;
    if (!strcmp(r->packing, "doc")) return at.token_pos + (uint64_t)n <= T;
    uint64_t p = ax_axd_doc_offsets(ds)[at.doc] + at.token_pos;
    uint64_t last = (ax_axd_n_tokens(ds) - 1) / T * T; /* the last target's position */
    return p >= 1 && p + (uint64_t)n - 1 <= last;
}

ax_status ax_exposure_reads_compute(const ax_canary_set *s, const ax_json *train_config,
                                    const ax_json *train_state, const ax_axd_t *ds, int have_sum,
                                    uint64_t ds_sum, ax_exposure_reads *r) {
    memset(r, 0, sizeof *r);
    const ax_json *pk = ax_json_get(train_config, "packing"),
                  *sl = ax_json_get(train_config, "seq-len");
    int64_t T;
    if (!pk || pk->type != AX_JSON_STR || !sl || !ax_json_int_in(sl, 1, INT32_MAX, &T) ||
        (strcmp(pk->str, "doc") && strcmp(pk->str, "packed")))
        return reads_unknown(r, "the checkpoint records no training packing and sequence length "
                                "(not trained by axmem train)");
    snprintf(r->packing, sizeof r->packing, "%s", pk->str);
    r->seq_len = T;
    uint64_t trained_on;
    if (!ax_json_get(train_state, "dataset_xxh3") ||
        ax_json_get_hex64(train_state, "dataset_xxh3", "checkpoint", &trained_on) != AX_OK) {
        ax_error_clear();
        return reads_unknown(r, "the checkpoint records no training dataset checksum");
    }
    if (!have_sum)
        return reads_unknown(r, "the canaried dataset is not found and the secrets file records "
                                "no checksum, so it cannot be matched to the training data");
    if (trained_on != ds_sum) {
        char why[160];
        snprintf(why, sizeof why,
                 "the checkpoint was trained on dataset 0x%016llx, not the canaried 0x%016llx",
                 (unsigned long long)trained_on, (unsigned long long)ds_sum);
        return reads_unknown(r, why);
    }
    if (!ds && strcmp(r->packing, "doc"))
        return reads_unknown(r, "packed training: the canaried dataset is needed for the copies' "
                                "stream positions and is not found");
    int sites = 0;
    for (int k = 0; k < s->n; k++) sites += s->c[k].n_sites;
    if (!sites) return reads_unknown(r, "the secrets file records no planted positions");
    if (!(r->read = calloc((size_t)s->n, sizeof *r->read)))
        return ax_errorf(AX_ERR_NOMEM, "out of memory");
    for (int k = 0; k < s->n; k++) {
        const ax_canary *c = &s->c[k];
        for (int i = 0; i < c->n_sites; i++) {
            if (ds && c->sites[i].doc >= ax_axd_n_docs(ds))
                return ax_errorf(AX_ERR_CORRUPT,
                                 "canary %d: a copy in document %llu, past the %llu of %s; pass "
                                 "the secrets file of this dataset",
                                 c->id, (unsigned long long)c->sites[i].doc,
                                 (unsigned long long)ax_axd_n_docs(ds), ax_axd_path(ds));
            r->read[k] += copy_read(r, ds, c->sites[i], c->n_tokens);
        }
        r->copies += c->repeats, r->copies_read += r->read[k];
        r->canaries_short += r->read[k] < c->repeats;
    }
    r->known = 1;
    snprintf(r->why, sizeof r->why,
             "%s: a copy is read when all its tokens are training targets (%s)", r->packing,
             strcmp(r->packing, "doc") ? "within the packed windows"
                                       : "within a document's first seq-len tokens");
    return AX_OK;
}

void ax_exposure_reads_free(ax_exposure_reads *r) {
    free(r->read);
    r->read = NULL;
}
