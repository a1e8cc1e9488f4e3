/* The privacy accountant (train/dp_accountant.h) against independent references: the RDP of
 * the subsampled Gaussian against its definition integrated by mpmath at 30 digits, Opacus and
 * dp_accounting; epsilon and delta against both libraries' accountants and conversions; the
 * epsilons published by Abadi et al. 2016, TF Privacy and Opacus, to their printed digits;
 * the noise solver; and the accountant a run keeps, across a save and restore. The reference
 * literals come from scripts/dp_accountant_reference.py. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "lib/core/json.h"
#include "lib/core/status.h"
#include "train/dp_accountant.h"

typedef struct {
    double q, sigma, alpha, exact, opacus, dpacc;
} rdp_case;

typedef struct {
    double q, sigma;
    int64_t steps;
    double delta, eps_opacus, order_opacus, eps_dpacc, order_dpacc, eps_conv, order_conv;
    double delta_conv, order_delta;
} eps_case;

typedef struct {
    double q;
    int64_t steps;
    double delta, epsilon, sigma;
} sigma_case;

#include "test_dp_accountant_ref.h"

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

TestSuite(dp_accountant, .timeout = 120);

static double rel(double a, double b) {
    return fabs(a - b) / fabs(b);
}

/* Opacus' and TF Privacy's default orders: 1.1 .. 10.9, 12 .. 63 */
static int opacus_orders(double *o) {
    int n = 0;
    for (int x = 1; x < 100; x++) o[n++] = 1 + x / 10.0;
    for (int a = 12; a < 64; a++) o[n++] = a;
    return n;
}

static void rdp_steps(double q, double sigma, int64_t steps, const double *orders, int n,
                      double *rdp) {
    ax_dp_rdp_orders(q, sigma, orders, n, rdp);
    for (int i = 0; i < n; i++) rdp[i] *= (double)steps;
}

Test(dp_accountant, rdp_matches_the_definition) {
    double worst = 0;
    for (int i = 0; i < N_OF(RDP_CASES); i++) {
        const rdp_case *c = &RDP_CASES[i];
        double r = ax_dp_rdp(c->q, c->sigma, c->alpha), e = rel(r, c->exact);
        cr_expect(e <= 2e-12, "q %g sigma %g alpha %g: %.17g, exact %.17g (%.1e)", c->q, c->sigma,
                  c->alpha, r, c->exact, e);
        worst = fmax(worst, e);
    }
    cr_log_info("RDP vs mpmath: worst relative difference %.1e over %d cases", worst,
                N_OF(RDP_CASES));
}

/* The libraries sum log(A) in log space, whose absolute error ~1e-15 is a large relative error
 * of rdp = log(A) / (alpha - 1) when A is within 1e-10 of 1; Opacus also stops its fractional
 * series at terms of e^-30. So they agree to 1e-10 relative or to 1e-12 in log(A). */
static int agrees(double mine, double theirs, double alpha) {
    return fabs(mine - theirs) <= 1e-10 * fabs(theirs) ||
           fabs(mine - theirs) * (alpha - 1) <= 1e-12;
}

Test(dp_accountant, rdp_matches_opacus_and_dp_accounting) {
    for (int i = 0; i < N_OF(RDP_CASES); i++) {
        const rdp_case *c = &RDP_CASES[i];
        double r = ax_dp_rdp(c->q, c->sigma, c->alpha);
        cr_expect(agrees(r, c->opacus, c->alpha), "q %g sigma %g alpha %g: %.17g, Opacus %.17g",
                  c->q, c->sigma, c->alpha, r, c->opacus);
        /* dp_accounting's fractional orders sum |terms|: an upper bound, above the exact */
        if (c->alpha == floor(c->alpha))
            cr_expect(agrees(r, c->dpacc, c->alpha),
                      "q %g sigma %g alpha %g: %.17g, dp_accounting %.17g", c->q, c->sigma,
                      c->alpha, r, c->dpacc);
        else
            cr_expect(r <= c->dpacc * (1 + 1e-12) + 1e-15,
                      "q %g sigma %g alpha %g: %.17g above dp_accounting's bound %.17g", c->q,
                      c->sigma, c->alpha, r, c->dpacc);
    }
}

Test(dp_accountant, epsilon_and_delta_match_the_libraries) {
    double oo[AX_DP_N_ORDERS], rdp[AX_DP_N_ORDERS], order;
    int no = opacus_orders(oo);
    double worst_dpacc = 0;
    for (int i = 0; i < N_OF(EPS_CASES); i++) {
        const eps_case *c = &EPS_CASES[i];
        /* Opacus' accountant: its orders, the tight conversion */
        rdp_steps(c->q, c->sigma, c->steps, oo, no, rdp);
        double e = ax_dp_epsilon(oo, rdp, no, c->delta, AX_DP_TIGHT, &order);
        cr_expect(rel(e, c->eps_opacus) <= 1e-9 && order == c->order_opacus,
                  "case %d: epsilon %.17g at %g, Opacus %.17g at %g", i, e, order, c->eps_opacus,
                  c->order_opacus);
        /* dp_accounting's conversions of (Opacus') RDP at the default orders */
        rdp_steps(c->q, c->sigma, c->steps, ax_dp_orders, AX_DP_N_ORDERS, rdp);
        e = ax_dp_epsilon(ax_dp_orders, rdp, AX_DP_N_ORDERS, c->delta, AX_DP_TIGHT, &order);
        cr_expect(rel(e, c->eps_conv) <= 1e-9 && order == c->order_conv,
                  "case %d: epsilon %.17g at %g, dp_accounting's conversion %.17g at %g", i, e,
                  order, c->eps_conv, c->order_conv);
        double d =
            ax_dp_delta(ax_dp_orders, rdp, AX_DP_N_ORDERS, c->eps_opacus, AX_DP_TIGHT, &order);
        cr_expect(rel(d, c->delta_conv) <= 1e-8 && order == c->order_delta,
                  "case %d: delta %.17g at %g, dp_accounting's conversion %.17g at %g", i, d, order,
                  c->delta_conv, c->order_delta);
        /* dp_accounting's accountant: its fractional orders' RDP is a bound above the exact one
         * (and an order whose series it cannot sum in 1000 terms it drops), so its epsilon is
         * at least the exact one, and equal where both pick the same integer order */
        cr_expect(e <= c->eps_dpacc * (1 + 1e-9),
                  "case %d: epsilon %.17g above dp_accounting %.17g", i, e, c->eps_dpacc);
        if (order == c->order_dpacc && order == floor(order))
            cr_expect(rel(e, c->eps_dpacc) <= 1e-9, "case %d: epsilon %.17g, dp_accounting %.17g",
                      i, e, c->eps_dpacc);
        worst_dpacc = fmax(worst_dpacc, rel(e, c->eps_dpacc));
    }
    cr_log_info("epsilon vs dp_accounting's RdpAccountant: worst relative difference %.1e",
                worst_dpacc);
}

/* Published epsilons, each recomputed as its source computed it (steps, orders, conversion)
 * and compared to the digits printed. */
enum { ORDERS_TF, ORDERS_TF_CLI, ORDERS_ABADI, ORDERS_OPACUS_DOC, ORDERS_OPACUS_DOC2 };

typedef struct {
    const char *source;
    double q, sigma;
    int64_t steps;
    double delta;
    int orders;
    ax_dp_conversion conv;
    double published, half_unit, order; /* order: the best order printed (0: none) */
} published_case;

static const published_case PUBLISHED[] = {
    /* Abadi et al. 2016 sec. 3.1: "if q = 0.01, sigma = 4, delta = 1e-5 and T = 10000, we have
     * epsilon ~ 1.26 using the moments accountant" (moments of orders lambda <= 32) */
    {"Abadi et al. 2016", 0.01, 4, 10000, 1e-5, ORDERS_ABADI, AX_DP_CLASSIC, 1.26, 0.005, 0},
    /* TF Privacy tutorials/README.md (2019): MNIST, 60000 examples, batch 256, 234 steps an
     * epoch, "For delta=1e-5, the current epsilon is" after epochs 1, 2 and 60 with noise 1.1,
     * and its table (noise 1.3 for 15 epochs, 0.7 for 45) */
    {"TF Privacy tutorial, epoch 1", 256 / 60000.0, 1.1, 234, 1e-5, ORDERS_TF, AX_DP_CLASSIC, 1.03,
     0.005, 0},
    {"TF Privacy tutorial, epoch 2", 256 / 60000.0, 1.1, 468, 1e-5, ORDERS_TF, AX_DP_CLASSIC, 1.11,
     0.005, 0},
    {"TF Privacy tutorial, epoch 60", 256 / 60000.0, 1.1, 14040, 1e-5, ORDERS_TF, AX_DP_CLASSIC,
     3.01, 0.005, 0},
    {"TF Privacy tutorial, noise 1.3", 256 / 60000.0, 1.3, 3510, 1e-5, ORDERS_TF, AX_DP_CLASSIC,
     1.19, 0.005, 0},
    {"TF Privacy tutorial, noise 0.7", 256 / 60000.0, 0.7, 10530, 1e-5, ORDERS_TF, AX_DP_CLASSIC,
     7.10, 0.005, 0},
    /* its README (January 2019): noise 1.12 for 60 epochs, 1.2 for 10, and epochs 1 and 2 */
    {"TF Privacy README, noise 1.12", 256 / 60000.0, 1.12, 14040, 1e-5, ORDERS_TF, AX_DP_CLASSIC,
     2.92, 0.005, 0},
    {"TF Privacy README, noise 1.2", 256 / 60000.0, 1.2, 2340, 1e-5, ORDERS_TF, AX_DP_CLASSIC, 1.20,
     0.005, 0},
    {"TF Privacy README, epoch 1", 256 / 60000.0, 1.12, 234, 1e-5, ORDERS_TF, AX_DP_CLASSIC, 1.00,
     0.005, 0},
    {"TF Privacy README, epoch 2", 256 / 60000.0, 1.12, 468, 1e-5, ORDERS_TF, AX_DP_CLASSIC, 1.04,
     0.005, 0},
    /* compute_dp_sgd_privacy.py --N=60000 --batch_size=256 --noise_multiplier=1.1 --epochs=60
     * --delta=1e-5: "eps = 3.01" (ceil(60 * 60000 / 256) steps; "{:.3g}") */
    {"TF Privacy compute_dp_sgd_privacy", 256 / 60000.0, 1.1, 14063, 1e-5, ORDERS_TF_CLI,
     AX_DP_CLASSIC, 3.01, 0.005, 0},
    /* Opacus' compute_dp_sgd_privacy (2020 docs): --dataset-size=60000 --batch-size=256
     * --noise_multiplier=1.12 --epochs=60 --delta=1e-5 --a 10 20 100 -> (2.95, 1e-5); its
     * steps were epochs * ceil(60000 / 256) = 14100 */
    {"Opacus compute_dp_sgd_privacy (2020)", 256 / 60000.0, 1.12, 14100, 1e-5, ORDERS_OPACUS_DOC,
     AX_DP_CLASSIC, 2.95, 0.005, 0},
    /* Opacus' compute_dp_sgd_privacy (current docs, tight conversion): --epochs=3 --delta=1e-5
     * --sample-rate 0.01 --noise-multiplier 1.0 --alphas 2 5 10 20 100 -> epsilon 2.39,
     * optimal alpha 5.0 (300 steps) */
    {"Opacus compute_dp_sgd_privacy (1.x)", 0.01, 1.0, 300, 1e-5, ORDERS_OPACUS_DOC2, AX_DP_TIGHT,
     2.39, 0.005, 5},
};

static int orders_of(int which, double *o) {
    static const double tf_cli_small[] = {1.25, 1.5, 1.75, 2, 2.25, 2.5, 3, 3.5, 4, 4.5};
    static const double doc[] = {10, 20, 100}, doc2[] = {2, 5, 10, 20, 100};
    int n = 0;
    switch (which) {
    case ORDERS_TF:
        return opacus_orders(o);
    case ORDERS_TF_CLI:
        for (int i = 0; i < N_OF(tf_cli_small); i++) o[n++] = tf_cli_small[i];
        for (int a = 5; a < 64; a++) o[n++] = a;
        o[n++] = 128, o[n++] = 256, o[n++] = 512;
        return n;
    case ORDERS_ABADI:
        for (int a = 2; a <= 33; a++) o[n++] = a;
        return n;
    case ORDERS_OPACUS_DOC:
        memcpy(o, doc, sizeof doc);
        return N_OF(doc);
    default:
        memcpy(o, doc2, sizeof doc2);
        return N_OF(doc2);
    }
}

Test(dp_accountant, published_epsilons) {
    for (int i = 0; i < N_OF(PUBLISHED); i++) {
        const published_case *c = &PUBLISHED[i];
        double o[256], rdp[256], order;
        int n = orders_of(c->orders, o);
        rdp_steps(c->q, c->sigma, c->steps, o, n, rdp);
        double e = ax_dp_epsilon(o, rdp, n, c->delta, c->conv, &order);
        cr_expect(fabs(e - c->published) <= c->half_unit, "%s: epsilon %.6f, published %.2f",
                  c->source, e, c->published);
        if (c->order)
            cr_expect_eq(order, c->order, "%s: order %g, published %g", c->source, order, c->order);
        /* the default orders include every order above but 1.25, 1.75 and 2.25 */
        double d = ax_dp_epsilon_of(c->q, c->sigma, c->steps, c->delta, c->conv, NULL);
        if (c->orders != ORDERS_TF_CLI)
            cr_expect(d <= e * (1 + 1e-12), "%s: the default orders give %.6f > %.6f", c->source, d,
                      e);
        cr_log_info("%s: %.4f (published %.2f); default orders %.4f; tight %.4f", c->source, e,
                    c->published, d,
                    ax_dp_epsilon_of(c->q, c->sigma, c->steps, c->delta, AX_DP_TIGHT, NULL));
    }
}

Test(dp_accountant, noise_solver_round_trips) {
    for (int i = 0; i < N_OF(SIGMA_CASES); i++) {
        const sigma_case *c = &SIGMA_CASES[i];
        double s;
        cr_assert_eq(ax_dp_noise_for(c->q, c->steps, c->epsilon, c->delta, AX_DP_TIGHT, &s), AX_OK,
                     "%s", ax_error_msg());
        cr_expect(rel(s, c->sigma) <= 1e-8, "case %d: sigma %.12g, reference %.12g", i, s,
                  c->sigma);
        /* it meets the target, and a hair less noise does not */
        cr_expect(ax_dp_epsilon_of(c->q, s, c->steps, c->delta, AX_DP_TIGHT, NULL) <= c->epsilon);
        cr_expect(ax_dp_epsilon_of(c->q, s * (1 - 1e-9), c->steps, c->delta, AX_DP_TIGHT, NULL) >
                  c->epsilon);
    }
    double s;
    /* the classic conversion never goes below -log(delta) / 1023 (the largest order) */
    cr_expect_eq(ax_dp_noise_for(0.01, 1000, 1e-3, 1e-5, AX_DP_CLASSIC, &s), AX_ERR_ARG,
                 "an epsilon no noise up to 1e6 reaches is refused");
    cr_expect_eq(ax_dp_noise_for(0, 1000, 1, 1e-5, AX_DP_TIGHT, &s), AX_ERR_ARG);
    cr_expect_eq(ax_dp_noise_for(0.01, 1000, 1, 1, AX_DP_TIGHT, &s), AX_ERR_ARG);
}

Test(dp_accountant, delta_inverts_epsilon) {
    double rdp[AX_DP_N_ORDERS], o1, o2;
    for (int conv = AX_DP_TIGHT; conv <= AX_DP_CLASSIC; conv++) {
        rdp_steps(0.01, 1.1, 5000, ax_dp_orders, AX_DP_N_ORDERS, rdp);
        double e = ax_dp_epsilon(ax_dp_orders, rdp, AX_DP_N_ORDERS, 1e-6, conv, &o1);
        double d = ax_dp_delta(ax_dp_orders, rdp, AX_DP_N_ORDERS, e, conv, &o2);
        cr_expect(rel(d, 1e-6) <= 1e-12 && o1 == o2, "delta %.17g at %g, epsilon's order %g", d, o2,
                  o1);
    }
}

Test(dp_accountant, edge_cases) {
    cr_expect_eq(ax_dp_rdp(0, 1, 2.5), 0);
    cr_expect_eq(ax_dp_rdp(1, 2, 3), 3 / 8.0, "q = 1: the Gaussian mechanism, alpha / (2 s^2)");
    cr_expect_eq(ax_dp_rdp(0.1, 0, 2), INFINITY);
    cr_expect_eq(ax_dp_rdp(0.1, 1, 1), INFINITY, "order 1 is not one of RDP's");
    /* no privacy loss at all: epsilon 0 for any delta */
    cr_expect_eq(ax_dp_epsilon_of(0, 1, 1000, 1e-5, AX_DP_TIGHT, NULL), 0);
    double order;
    cr_expect_eq(ax_dp_epsilon_of(0.1, 0, 10, 1e-5, AX_DP_TIGHT, &order), INFINITY);
    cr_expect_eq(order, 0);
    /* RDP grows with the order and the rate, falls with the noise, across the switch between
     * the fractional and the integer sums */
    for (int k = 1; k < AX_DP_N_ORDERS; k++) {
        double a = ax_dp_orders[k - 1], b = ax_dp_orders[k];
        cr_expect(ax_dp_rdp(0.01, 1, a) <= ax_dp_rdp(0.01, 1, b), "orders %g, %g", a, b);
        cr_expect(ax_dp_rdp(1e-4, 3, a) <= ax_dp_rdp(1e-4, 3, b), "orders %g, %g", a, b);
    }
    cr_expect(ax_dp_rdp(0.02, 1, 5.5) > ax_dp_rdp(0.01, 1, 5.5));
    cr_expect(ax_dp_rdp(0.01, 1.01, 5.5) < ax_dp_rdp(0.01, 1, 5.5));
}

/* ---------------------------------------------------------------- the run's accountant */

static void expect_same(const ax_dp_accountant *a, const ax_dp_accountant *b) {
    double ra[AX_DP_N_ORDERS], rb[AX_DP_N_ORDERS];
    ax_dp_acct_rdp(a, ra);
    ax_dp_acct_rdp(b, rb);
    cr_expect_eq(a->steps, b->steps);
    cr_expect(!memcmp(ra, rb, sizeof ra), "the RDP differs bit for bit");
    double ea = ax_dp_acct_epsilon(a, 1e-5, AX_DP_TIGHT, NULL);
    double eb = ax_dp_acct_epsilon(b, 1e-5, AX_DP_TIGHT, NULL);
    cr_expect(!memcmp(&ea, &eb, sizeof ea), "epsilon %.17g vs %.17g", ea, eb);
}

/* write a's state as JSON text, parse it and rebuild */
static void save_restore(const ax_dp_accountant *a, ax_dp_accountant *b) {
    ax_jw w;
    ax_jw_init(&w);
    ax_dp_acct_write_json(a, &w);
    const char *text = ax_jw_text(&w);
    cr_assert(text);
    ax_json *o;
    cr_assert_eq(ax_json_parse(text, strlen(text), "state", &o), AX_OK);
    cr_assert_eq(ax_dp_acct_read_json(b, o, "state"), AX_OK, "%s", ax_error_msg());
    ax_json_free(o);
    ax_jw_free(&w);
}

Test(dp_accountant, a_resumed_run_continues_exactly) {
    /* a run that changes its rate (and noise) twice, checkpointed mid-run and resumed */
    const double q[] = {256 / 60000.0, 0.01, 256 / 60000.0}, s[] = {1.1, 0.9, 1.1};
    const int n[] = {700, 300, 500};
    ax_dp_accountant whole, first, resumed;
    ax_dp_acct_init(&whole);
    ax_dp_acct_init(&first);
    for (int r = 0; r < 3; r++)
        for (int t = 0; t < n[r]; t++) cr_assert_eq(ax_dp_acct_add(&whole, q[r], s[r], 1), AX_OK);
    for (int t = 0; t < 850; t++)
        ax_dp_acct_add(&first, t < 700 ? q[0] : q[1], t < 700 ? s[0] : s[1], 1);
    save_restore(&first, &resumed);
    for (int t = 850; t < 1500; t++)
        ax_dp_acct_add(&resumed, t < 1000 ? q[1] : q[2], t < 1000 ? s[1] : s[2], 1);
    cr_expect_eq(whole.n_runs, 3);
    expect_same(&whole, &resumed);
    /* composition: the sum of each run's RDP */
    double sum[AX_DP_N_ORDERS] = {0}, r1[AX_DP_N_ORDERS], got[AX_DP_N_ORDERS];
    for (int r = 0; r < 3; r++) {
        ax_dp_rdp_orders(q[r], s[r], ax_dp_orders, AX_DP_N_ORDERS, r1);
        for (int k = 0; k < AX_DP_N_ORDERS; k++) sum[k] += n[r] * r1[k];
    }
    ax_dp_acct_rdp(&whole, got);
    for (int k = 0; k < AX_DP_N_ORDERS; k++)
        cr_expect(rel(got[k], sum[k]) <= 1e-14, "order %g", ax_dp_orders[k]);
    /* restoring a restored state changes nothing */
    ax_dp_accountant again;
    save_restore(&resumed, &again);
    expect_same(&resumed, &again);
    ax_dp_acct_free(&whole);
    ax_dp_acct_free(&first);
    ax_dp_acct_free(&resumed);
    ax_dp_acct_free(&again);
}

static ax_status read_text(const char *text) {
    ax_json *o;
    cr_assert_eq(ax_json_parse(text, strlen(text), "t", &o), AX_OK);
    ax_dp_accountant a;
    ax_error_clear();
    ax_status st = ax_dp_acct_read_json(&a, o, "ckpt/manifest.json");
    if (st == AX_OK) ax_dp_acct_free(&a);
    ax_json_free(o);
    return st;
}

Test(dp_accountant, a_damaged_state_is_refused) {
    cr_expect_eq(read_text("{\"steps\": 0, \"runs\": []}"), AX_OK);
    cr_expect_eq(read_text("{\"steps\": 5, \"runs\": [{\"q\": 0.01, \"sigma\": 1, \"steps\": 5}]}"),
                 AX_OK, "orders and rdp are optional");
    cr_expect_eq(read_text("{\"steps\": 6, \"runs\": [{\"q\": 0.01, \"sigma\": 1, \"steps\": 5}]}"),
                 AX_ERR_CORRUPT);
    cr_expect(strstr(ax_error_msg(), "ckpt/manifest.json"), "%s", ax_error_msg());
    cr_expect_eq(read_text("{\"steps\": 5, \"runs\": [{\"q\": 2, \"sigma\": 1, \"steps\": 5}]}"),
                 AX_ERR_CORRUPT);
    cr_expect_eq(read_text("{\"steps\": 5}"), AX_ERR_CORRUPT);
    /* a stored RDP that does not follow from the runs */
    ax_dp_accountant a;
    ax_dp_acct_init(&a);
    ax_dp_acct_add(&a, 0.01, 1, 5);
    ax_jw w;
    ax_jw_init(&w);
    ax_dp_acct_write_json(&a, &w);
    char *text = strdup(ax_jw_text(&w));
    cr_expect_eq(read_text(text), AX_OK);
    *strstr(text, "\"sigma\":1") = 0; /* sigma 1 -> 1.5, the rdp kept */
    char tampered[16384];
    snprintf(tampered, sizeof tampered, "%s\"sigma\":1.5%s", text,
             text + strlen(text) + strlen("\"sigma\":1"));
    cr_expect_eq(read_text(tampered), AX_ERR_CORRUPT);
    cr_expect(strstr(ax_error_msg(), "does not follow"), "%s", ax_error_msg());
    free(text);
    ax_jw_free(&w);
    ax_dp_acct_free(&a);
    cr_expect_eq(ax_dp_acct_add(&a, 0.01, -1, 1), AX_ERR_ARG);
}
