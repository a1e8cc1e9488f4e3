/* memscan exposure against a plain, independent full enumeration, on formats and tokenizers where
 * the tokenizer joins the prefix's last space to some secrets' first characters and not others
 * (so a scorer that charges only the tokens after a shared prefix scores candidates on different
 * footings): for every string of the space, the canary text is built, encoded, run through one
 * full forward and its tokens' log-probabilities summed (log-softmax in double here, not the
 * scan's code); the ranks (ties against the secret) must equal the scan's. Then the skew-normal
 * estimate against the exact exposure on a 10^4 space, its error printed. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/canary.h"
#include "data/tokenizer.h"
#include "lib/model/model.h"
#include "memscan/exposure.h"
#include "tests/unit/test_suite_files.h"
#include "tests/unit/test_tiny_model.h"

TestSuite(exposure_enum, .init = ts_quiet, .fini = ts_cleanup, .timeout = 300);

#define VOCAB 420 /* the GPT-2 fixture's vocabulary; the axmem tokenizer's is smaller */

/* axmem's BPE on text where a space joins some digits and letters ("is 4", " c") and not
 * others, so the merge varies across a format's strings */
static ax_tokenizer_t *axmem_tokenizer(void) {
    ax_bpe_trainer_t *tr = NULL;
    ax_tokenizer_t *tok = NULL;
    const char *text = "my PIN is 4 my PIN is 41 code: c7 code: d0 is 4 is 17 c d c d 41 40 "
                       "my PIN is 43 code: cd code: c41 c c d is 4 is 4 and 17 or 14";
    cr_assert_eq(ax_bpe_trainer_create(&tr), AX_OK);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(ax_bpe_trainer_add(tr, (const uint8_t *)text, strlen(text)), AX_OK);
    cr_assert_eq(ax_bpe_trainer_train(tr, 280, NULL, &tok), AX_OK, "%s", ax_error_msg());
    ax_bpe_trainer_free(tr);
    return tok;
}

static ax_tokenizer_t *gpt2_tokenizer(void) {
    ax_tokenizer_t *tok = NULL;
    cr_assert_eq(ax_tokenizer_load("tests/fixtures/tokenizers/gpt2.json", &tok), AX_OK, "%s",
                 ax_error_msg());
    return tok;
}

/* the tokens of lead + prefix + secret ([*n], malloc'd) */
static int32_t *encode_text(const ax_tokenizer_t *tok, const char *lead, const char *prefix,
                            const char *secret, size_t *n) {
    char text[3 * AX_CANARY_MAX_TEXT];
    snprintf(text, sizeof text, "%s%s%s", lead, prefix, secret);
    int32_t *t = NULL;
    cr_assert_eq(ax_tokenizer_encode(tok, (const uint8_t *)text, strlen(text), &t, n), AX_OK);
    return t;
}

/* leading tokens whose bytes lie wholly inside the first `bytes` bytes */
static int tokens_within(const ax_tokenizer_t *tok, const int32_t *t, size_t n, size_t bytes) {
    size_t at = 0;
    int k = 0;
    for (; (size_t)k < n; k++) {
        size_t len;
        ax_tokenizer_token_bytes(tok, t[k], &len);
        if (at + len > bytes) break;
        at += len;
    }
    return k;
}

/* tokens inside lead + prefix when the secret is string i of the space */
static int prefix_tokens_of(const ax_tokenizer_t *tok, const ax_canary_format *f, const char *lead,
                            const char *prefix, long i) {
    char s[AX_CANARY_MAX_TEXT];
    size_t n;
    ax_canary_secret_nth(f, (uint64_t)i, s);
    int32_t *t = encode_text(tok, lead, prefix, s, &n);
    int k = tokens_within(tok, t, n, strlen(lead) + strlen(prefix));
    free(t);
    return k;
}

/* a secrets file (version 2) for canaries secrets[n] of fmt, planted as lead + prefix + secret */
static void write_set(const char *path, const ax_tokenizer_t *tok, const char *fmt,
                      const char *lead, char (*secrets)[AX_CANARY_MAX_TEXT], int n) {
    ax_canary_format f;
    char prefix[AX_CANARY_MAX_TEXT];
    cr_assert_eq(ax_canary_format_parse(fmt, &f), AX_OK);
    ax_canary_prefix(&f, prefix);
    FILE *fp = fopen(path, "w");
    cr_assert(fp);
    fprintf(fp,
            "{\"version\":2,\"format\":\"%s\",\"space\":%.0f,\"seed\":1,\"tokenizer\":\"\","
            "\"dataset\":\"\",\"lead\":\"%s\",\"canaries\":[",
            fmt, f.space, lead);
    for (int k = 0; k < n; k++) {
        size_t nt;
        int32_t *t = encode_text(tok, lead, prefix, secrets[k], &nt);
        fprintf(fp, "%s{\"id\":%d,\"prefix\":\"%s\",\"secret\":\"%s\",\"repeats\":%d,\"tokens\":[",
                k ? "," : "", k, prefix, secrets[k], k + 1);
        for (size_t i = 0; i < nt; i++) fprintf(fp, "%s%d", i ? "," : "", t[i]);
        fprintf(fp, "],\"prefix_tokens\":%d,\"inserted\":[]}",
                tokens_within(tok, t, nt, strlen(lead) + strlen(prefix)));
        free(t);
    }
    fprintf(fp, "]}");
    fclose(fp);
}

/* The independent scorer: log p(tokens of text | end-of-text), one forward of one sequence,
 * the log-softmax of each logit row in double. */
static double plain_loglik(ax_model_t *m1, const ax_tokenizer_t *tok, const char *lead,
                           const char *prefix, const char *secret, int T) {
    size_t n;
    int32_t *t = encode_text(tok, lead, prefix, secret, &n);
    cr_assert((int)n <= T, "%zu tokens, the model holds %d", n, T);
    int32_t in[64] = {ax_tokenizer_eot(tok)}, tg[64] = {0};
    uint8_t mask[64] = {0};
    memcpy(in + 1, t, sizeof(int32_t) * (n - 1));
    ax_model_forward(m1, in, tg, mask, 1, 1.0f, 0);
    int v0, valid, Vl;
    ax_model_vocab_slice(m1, &v0, &valid, &Vl);
    static float lg[64 * 512];
    cr_assert((size_t)T * (size_t)Vl <= sizeof lg / sizeof lg[0]);
    cr_assert_eq(ax_model_read_logits(m1, lg), AX_OK);
    double sum = 0;
    for (size_t j = 0; j < n; j++) {
        const float *row = lg + j * (size_t)Vl;
        double mx = -INFINITY, z = 0;
        for (int v = 0; v < valid; v++) mx = fmax(mx, row[v]);
        for (int v = 0; v < valid; v++) z += exp((double)row[v] - mx);
        sum += (double)row[t[j]] - mx - log(z);
    }
    free(t);
    return sum;
}

typedef struct {
    const char *name;
    ax_tokenizer_t *(*make)(void);
} tok_kind;

static const tok_kind TOKS[] = {{"axmem BPE", axmem_tokenizer},
                                {"GPT-2 tokenizer.json", gpt2_tokenizer}};

typedef struct {
    const char *format, *lead;
} fmt_case;

static const fmt_case FORMATS[] = {{"my PIN is {d3}", " "}, {"code: {a1}{d2}", ""}};

static int cmp_desc(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

Test(exposure_enum, ranks_equal_a_full_enumeration_where_the_merge_varies) {
    char path[128];
    snprintf(path, sizeof path, "/tmp/axmem_test_%d_enum.json", (int)getpid());
    int exact_equal = 0, compared = 0;
    for (size_t ti = 0; ti < sizeof TOKS / sizeof TOKS[0]; ti++) {
        ax_tokenizer_t *tok = TOKS[ti].make();
        for (size_t fi = 0; fi < sizeof FORMATS / sizeof FORMATS[0]; fi++) {
            const fmt_case *fc = &FORMATS[fi];
            ax_canary_format f;
            char prefix[AX_CANARY_MAX_TEXT];
            cr_assert_eq(ax_canary_format_parse(fc->format, &f), AX_OK);
            ax_canary_prefix(&f, prefix);
            long N = (long)f.space;
            /* the merge varies: candidates differ in how many tokens lie inside lead + prefix */
            int lo = 1 << 30, hi = -1, T = 0;
            char s[AX_CANARY_MAX_TEXT];
            for (long i = 0; i < N; i++) {
                ax_canary_secret_nth(&f, (uint64_t)i, s);
                size_t n;
                free(encode_text(tok, fc->lead, prefix, s, &n));
                int k = prefix_tokens_of(tok, &f, fc->lead, prefix, i);
                lo = k < lo ? k : lo, hi = k > hi ? k : hi, T = (int)n > T ? (int)n : T;
            }
            cr_assert(hi > lo, "%s, '%s': every candidate shares %d prefix tokens: proves nothing",
                      TOKS[ti].name, fc->format, lo);
            /* the plain enumeration */
            ax_model_t *m1 = ts_tiny_model(1, T, VOCAB, 31 + ti);
            double *all = malloc(sizeof *all * (size_t)N),
                   *sorted = malloc(sizeof *all * (size_t)N);
            for (long i = 0; i < N; i++) {
                ax_canary_secret_nth(&f, (uint64_t)i, s);
                all[i] = plain_loglik(m1, tok, fc->lead, prefix, s, T);
            }
            /* canaries at the enumeration's ranks 1, 3, 20, 200 and the middle, and the most
             * likely candidate of each tokenization of the prefix; first in the file one whose
             * prefix's last space stands alone (the file's first canary must not matter) */
            memcpy(sorted, all, sizeof *all * (size_t)N);
            qsort(sorted, (size_t)N, sizeof *sorted, cmp_desc);
            const long at[] = {0, 2, 19, 199, N / 2};
            char secrets[7][AX_CANARY_MAX_TEXT];
            long idx[7];
            int NC = 0;
            for (int k = 0; k < 5; k++, NC++)
                for (idx[k] = 0; all[idx[k]] != sorted[at[k]]; idx[k]++) continue;
            for (int side = 0; side < 2; side++) {
                long best = -1;
                for (long i = 0; i < N; i++)
                    if (prefix_tokens_of(tok, &f, fc->lead, prefix, i) == (side ? hi : lo) &&
                        (best < 0 || all[i] > all[best]))
                        best = i;
                int dup = 0;
                for (int k = 0; k < NC; k++) dup |= idx[k] == best;
                if (!dup) idx[NC++] = best;
                if (side) /* hi: the prefix's last space is a token of its own */
                    for (int k = 0; k < NC; k++)
                        if (idx[k] == best) idx[k] = idx[0], idx[0] = best;
            }
            for (int k = 0; k < NC; k++) ax_canary_secret_nth(&f, (uint64_t)idx[k], secrets[k]);
            write_set(path, tok, fc->format, fc->lead, secrets, NC);
            ax_canary_set cs;
            cr_assert_eq(ax_canary_set_load(path, &cs), AX_OK, "%s", ax_error_msg());
            ax_exposure_config c = {.exact_max = 1e5, .batch = 16, .seed = 1};
            ax_exposure_plan *p = NULL;
            cr_assert_eq(ax_exposure_plan_build(&cs, tok, &c, &p), AX_OK, "%s", ax_error_msg());
            cr_assert(ax_exposure_plan_exact(p));
            ax_model_t *m = ts_tiny_model(c.batch, ax_exposure_plan_T(p), VOCAB, 31 + ti);
            ax_exposure_result r;
            cr_assert_eq(ax_exposure_run(m, &cs, p, &c, &r), AX_OK, "%s", ax_error_msg());
            for (int k = 0; k < NC; k++) {
                double me = all[idx[k]];
                long ge = 0, near = 0; /* others at least as likely; others within 1e-5 */
                for (long i = 0; i < N; i++)
                    if (i != idx[k]) ge += all[i] >= me, near += fabs(all[i] - me) <= 1e-5;
                cr_expect(fabs(r.r[k].loglik - me) < 1e-4,
                          "%s, '%s', %s: log-likelihood %.8g, "
                          "enumeration %.8g",
                          TOKS[ti].name, fc->format, secrets[k], r.r[k].loglik, me);
                compared++;
                if (!near) {
                    exact_equal++;
                    cr_expect_eq(r.r[k].rank, (double)(1 + ge),
                                 "%s, '%s', %s: rank %g, enumeration %ld", TOKS[ti].name,
                                 fc->format, secrets[k], r.r[k].rank, 1 + ge);
                } else { /* a near tie: either order is within float rounding */
                    cr_expect(fabs(r.r[k].rank - (double)(1 + ge)) <= (double)near,
                              "%s, '%s', %s: rank %g, enumeration %ld (%ld near ties)",
                              TOKS[ti].name, fc->format, secrets[k], r.r[k].rank, 1 + ge, near);
                }
                cr_expect(fabs(r.r[k].exposure - (log2((double)N) - log2(1.0 + (double)ge))) <
                              1e-9 + (near ? 1 : 0),
                          "exposure %g", r.r[k].exposure);
            }
            char ranks[256];
            int at_r = 0;
            for (int k = 0; k < NC; k++)
                at_r += snprintf(ranks + at_r, sizeof ranks - (size_t)at_r, " %g", r.r[k].rank);
            cr_log_info("%s, '%s' (lead '%s'): prefix tokens vary %d..%d over %ld candidates; "
                        "ranks%s",
                        TOKS[ti].name, fc->format, fc->lead, lo, hi, N, ranks);
            ax_exposure_result_free(&r);
            ax_exposure_plan_free(p);
            ax_canary_set_free(&cs);
            ax_model_free(m), ax_model_free(m1);
            free(all), free(sorted);
        }
        ax_tokenizer_free(tok);
    }
    cr_expect(exact_equal >= compared - 2, "only %d of %d ranks free of near ties", exact_equal,
              compared);
}

/* The skew-normal estimate against the exact exposure on a 10^4 space small enough for both:
 * canaries at exact ranks 1 .. 3000, the estimate from 3000 random candidates. */
Test(exposure_enum, estimate_against_exact_on_a_small_space) {
    char path[128];
    snprintf(path, sizeof path, "/tmp/axmem_test_%d_est.json", (int)getpid());
    ax_tokenizer_t *tok = gpt2_tokenizer();
    const char *fmt = "my PIN is {d4}", *lead = " ";
    /* the exact scan first, with one canary, to rank the whole space */
    char secrets[6][AX_CANARY_MAX_TEXT] = {"0000"};
    write_set(path, tok, fmt, lead, secrets, 1);
    ax_canary_set cs;
    cr_assert_eq(ax_canary_set_load(path, &cs), AX_OK, "%s", ax_error_msg());
    ax_exposure_config c = {.exact_max = 1e5, .batch = 64, .seed = 1, .candidates = 3000};
    ax_exposure_plan *p = NULL;
    cr_assert_eq(ax_exposure_plan_build(&cs, tok, &c, &p), AX_OK, "%s", ax_error_msg());
    int T = ax_exposure_plan_T(p);
    ax_model_t *m = ts_tiny_model(c.batch, T, VOCAB, 7);
    /* every candidate's log-likelihood from the exact plan's scoring: rank them */
    enum { N = 10000 };
    static double all[N], sorted[N];
    ax_canary_format f;
    cr_assert_eq(ax_canary_format_parse(fmt, &f), AX_OK);
    ax_model_t *m1 = ts_tiny_model(1, T, VOCAB, 7);
    char prefix[AX_CANARY_MAX_TEXT], s[AX_CANARY_MAX_TEXT];
    ax_canary_prefix(&f, prefix);
    for (long i = 0; i < N; i++) {
        ax_canary_secret_nth(&f, (uint64_t)i, s);
        all[i] = plain_loglik(m1, tok, lead, prefix, s, T);
    }
    memcpy(sorted, all, sizeof all);
    qsort(sorted, N, sizeof *sorted, cmp_desc);
    const long at[] = {0, 9, 99, 299, 999, 2999};
    for (int k = 0; k < 6; k++) {
        long i = 0;
        while (all[i] != sorted[at[k]]) i++;
        ax_canary_secret_nth(&f, (uint64_t)i, secrets[k]);
    }
    ax_exposure_plan_free(p);
    ax_canary_set_free(&cs);
    write_set(path, tok, fmt, lead, secrets, 6);
    cr_assert_eq(ax_canary_set_load(path, &cs), AX_OK, "%s", ax_error_msg());
    ax_exposure_result ex, es;
    cr_assert_eq(ax_exposure_plan_build(&cs, tok, &c, &p), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(ax_exposure_run(m, &cs, p, &c, &ex), AX_OK, "%s", ax_error_msg());
    ax_exposure_plan_free(p);
    c.exact_max = 100; /* the same space, estimated */
    cr_assert_eq(ax_exposure_plan_build(&cs, tok, &c, &p), AX_OK, "%s", ax_error_msg());
    cr_assert(!ax_exposure_plan_exact(p));
    cr_assert_eq(ax_exposure_run(m, &cs, p, &c, &es), AX_OK, "%s", ax_error_msg());
    double worst = 0;
    for (int k = 0; k < 6; k++) {
        double err = es.r[k].exposure - ex.r[k].exposure;
        cr_log_info("exact rank %5g: exact %6.3f bits, skew-normal estimate (%ld candidates; xi "
                    "%.3f omega %.3f alpha %.3f) %6.3f, error %+.3f bits",
                    ex.r[k].rank, ex.r[k].exposure, es.g[0].candidates, es.g[0].fit.xi,
                    es.g[0].fit.omega, es.g[0].fit.alpha, es.r[k].exposure, err);
        cr_expect(fabs(es.r[k].loglik - ex.r[k].loglik) < 1e-9, "same scores");
        worst = fmax(worst, fabs(err));
    }
    cr_log_info("skew-normal estimate: largest error %.3f bits over exact ranks 1..3000", worst);
    cr_expect(worst < 1.5, "the estimate is off by %g bits", worst);
    ax_exposure_result_free(&ex), ax_exposure_result_free(&es);
    ax_exposure_plan_free(p);
    ax_canary_set_free(&cs);
    ax_model_free(m), ax_model_free(m1);
    ax_tokenizer_free(tok);
}
