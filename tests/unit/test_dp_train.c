/* DP-SGD on the training side: the Poisson sampler (its rate and independence against the
 * binomial law, determinism, the same sample on every grid), the --dp-* flag checks, epsilon
 * after every step in metrics.jsonl and in the checkpoint manifest (against the accountant's
 * closed form for the run's q, sigma and delta), and a resumed run continuing epsilon and the
 * losses exactly. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/axd.h"
#include "data/loader.h"
#include "lib/core/fsutil.h"
#include "lib/core/json.h"
#include "train/dp_accountant.h"
#include "train/dp_sample.h"
#include "train/train_dp.h"
#include "train/train_run.h"
#include "tests/unit/test_train_util.h"

/* ---- the sampler ---- */

Test(dp_sample, rate_and_independence_follow_the_binomial_law) {
    const uint64_t N = 20000;
    const int steps = 40;
    const double q = 0.01;
    int64_t *list = NULL, cap = 0, n = 0, total = 0, both = 0;
    uint8_t *prev = calloc(N, 1), *cur = calloc(N, 1);
    for (int s = 0; s < steps; s++) {
        cr_assert_eq(ax_dp_sample_step(7, s, N, q, &list, &cap, &n), AX_OK);
        memset(cur, 0, N);
        for (int64_t i = 0; i < n; i++) {
            cr_assert(i == 0 || list[i] > list[i - 1], "the sample is in increasing order");
            cur[list[i]] = 1;
        }
        if (s > 0)
            for (uint64_t e = 0; e < N; e++) both += prev[e] & cur[e];
        memcpy(prev, cur, N);
        total += n;
    }
    /* sampled count ~ Binomial(N steps, q); pairs of consecutive steps ~ Binomial(N (steps-1),
     * q^2): both within 5 standard deviations */
    double trials = (double)N * steps, mean = trials * q, sd = sqrt(trials * q * (1 - q));
    cr_assert(fabs((double)total - mean) < 5 * sd, "%lld sampled, expected %.0f +- %.0f",
              (long long)total, mean, sd);
    double pairs = (double)N * (steps - 1), pm = pairs * q * q, ps = sqrt(pairs * q * q);
    cr_assert(fabs((double)both - pm) < 5 * ps, "%lld in two consecutive steps, expected %.1f",
              (long long)both, pm);
    free(list), free(prev), free(cur);
}

Test(dp_sample, deterministic_and_keyed_by_seed_and_step) {
    int64_t *a = NULL, *b = NULL, ca = 0, cb = 0, na, nb;
    cr_assert_eq(ax_dp_sample_step(3, 5, 5000, 0.05, &a, &ca, &na), AX_OK);
    cr_assert_eq(ax_dp_sample_step(3, 5, 5000, 0.05, &b, &cb, &nb), AX_OK);
    cr_assert_eq(na, nb);
    cr_assert(na > 0 && !memcmp(a, b, (size_t)na * sizeof *a), "same key, same sample");
    for (int64_t i = 0; i < na; i++) cr_assert(ax_dp_sampled(3, 5, (uint64_t)a[i], 0.05));
    /* another step, another seed: another sample */
    cr_assert_eq(ax_dp_sample_step(3, 6, 5000, 0.05, &b, &cb, &nb), AX_OK);
    cr_assert(na != nb || memcmp(a, b, (size_t)na * sizeof *a), "step 6 repeats step 5");
    cr_assert_eq(ax_dp_sample_step(4, 5, 5000, 0.05, &b, &cb, &nb), AX_OK);
    cr_assert(na != nb || memcmp(a, b, (size_t)na * sizeof *a), "seed 4 repeats seed 3");
    /* q = 1 takes every example, q = 0 none */
    cr_assert_eq(ax_dp_sample_step(3, 5, 100, 1.0, &b, &cb, &nb), AX_OK);
    cr_assert_eq(nb, 100);
    cr_assert_eq(ax_dp_sample_step(3, 5, 100, 0.0, &b, &cb, &nb), AX_OK);
    cr_assert_eq(nb, 0);
    free(a), free(b);
}

/* Every layout of a step's n examples over P batch ranks of B rows takes each position exactly
 * once, in as many micro-batches on every rank, and pads the rest: the grid changes where an
 * example is processed, never which examples a step has. */
Test(dp_sample, every_grid_processes_the_same_examples_once) {
    int64_t ns[] = {0, 1, 7, 8, 9, 31};
    for (size_t t = 0; t < sizeof ns / sizeof ns[0]; t++)
        for (int P = 1; P <= 4; P++)
            for (int B = 1; B <= 3; B++) {
                int64_t n = ns[t], micro = ax_dp_micro_count(n, B, P);
                cr_assert(micro >= 1 && (micro - 1) * B * P < (n > 0 ? n : 1),
                          "n %lld P %d B %d: %lld micro-batches", (long long)n, P, B,
                          (long long)micro);
                int seen[64] = {0}, pads = 0;
                for (int64_t m = 0; m < micro; m++)
                    for (int p = 0; p < P; p++)
                        for (int j = 0; j < B; j++) {
                            int64_t k = ax_dp_row_position(n, B, P, m, p, j);
                            if (k < 0)
                                pads++;
                            else
                                seen[k]++;
                        }
                for (int64_t k = 0; k < n; k++) cr_assert_eq(seen[k], 1, "position %lld", k);
                cr_assert_eq(pads, micro * B * P - n);
            }
}

/* ---- the flags ---- */

static void dp_defaults(ax_train_config *c) {
    cr_assert_eq(ax_cfg_set_defaults(&ax_train_table, c), AX_OK);
}
/* ax_train_dp_check on flags name=value..., NULL-terminated; returns the status */
static ax_status check_flags(const char *first, ...) {
    ax_train_config c;
    dp_defaults(&c);
    uint8_t was_set[256] = {0};
    va_list ap;
    va_start(ap, first);
    for (const char *name = first; name; name = va_arg(ap, const char *)) {
        const char *value = va_arg(ap, const char *);
        cr_assert_eq(ax_cfg_set(&ax_train_table, &c, name, value, was_set), AX_OK, "%s",
                     ax_error_msg());
        tt_mark(was_set, name);
    }
    va_end(ap);
    ax_error_clear();
    return ax_train_dp_check(&c, was_set);
}
#define REFUSED(needle, ...)                                                                       \
    do {                                                                                           \
        cr_assert_eq(check_flags(__VA_ARGS__, NULL), AX_ERR_ARG, "accepted: " #__VA_ARGS__);       \
        cr_assert(strstr(ax_error_msg(), needle), "%s: message lacks '%s': %s", #__VA_ARGS__,      \
                  needle, ax_error_msg());                                                         \
    } while (0)

Test(dp_flags, inconsistent_combinations_are_refused_naming_the_flags) {
    cr_assert_eq(check_flags("lr", "1e-3", NULL), AX_OK, "no DP flag: nothing to check");
    cr_assert_eq(check_flags("dp-clip", "1", "dp-noise", "1.1", "dp-delta", "1e-5", NULL), AX_OK);
    cr_assert_eq(check_flags("dp-clip", "1", "dp-epsilon", "8", "dp-delta", "1e-5",
                             "dp-sample-rate", "0.01", NULL),
                 AX_OK);
    REFUSED("--dp-noise and --dp-epsilon", "dp-clip", "1", "dp-noise", "1", "dp-epsilon", "8",
            "dp-delta", "1e-5");
    REFUSED("--dp-delta is missing", "dp-clip", "1", "dp-epsilon", "8");
    REFUSED("--dp-delta is missing", "dp-clip", "1", "dp-noise", "1");
    REFUSED("--dp-clip needs the noise", "dp-clip", "1", "dp-delta", "1e-5");
    REFUSED("--dp-clip must be above 0", "dp-clip", "0", "dp-noise", "1", "dp-delta", "1e-5");
    REFUSED("--dp-noise must be above 0", "dp-clip", "1", "dp-noise", "0", "dp-delta", "1e-5");
    REFUSED("--dp-epsilon must be above 0", "dp-clip", "1", "dp-epsilon", "0", "dp-delta", "1e-5");
    REFUSED("--dp-sample-rate must be above 0", "dp-clip", "1", "dp-noise", "1", "dp-delta", "1e-5",
            "dp-sample-rate", "0");
    REFUSED("--grad-clip", "dp-clip", "1", "dp-noise", "1", "dp-delta", "1e-5", "grad-clip", "0.5");
    REFUSED("give --dp-clip", "dp-noise", "1");
    REFUSED("give --dp-clip", "dp-epsilon", "3", "dp-delta", "1e-5");
    REFUSED("give --dp-clip", "dp-sample-rate", "0.1");
    /* out of range for the table itself */
    ax_train_config c;
    dp_defaults(&c);
    cr_assert_neq(ax_cfg_set(&ax_train_table, &c, "dp-delta", "1.5", NULL), AX_OK);
    cr_assert_neq(ax_cfg_set(&ax_train_table, &c, "dp-sample-rate", "2", NULL), AX_OK);
    cr_assert_neq(ax_cfg_set(&ax_train_table, &c, "dp-clip", "-1", NULL), AX_OK);
}

Test(dp_flags, dataset_size_bounds_delta_and_rate) {
    ax_train_config c;
    dp_defaults(&c);
    c.dp_clip = 1, c.dp_noise = 1, c.dp_delta = 1e-3, c.batch = 16;
    ax_train_dp d;
    ax_error_clear();
    cr_assert_eq(ax_train_dp_resolve(&d, &c, 1000), AX_ERR_ARG, "delta 1e-3 >= 1/1000");
    cr_assert(strstr(ax_error_msg(), "--dp-delta"), "%s", ax_error_msg());
    ax_train_dp_free(&d);
    ax_error_clear();
    c.dp_delta = 1e-5;
    cr_assert_eq(ax_train_dp_resolve(&d, &c, 10), AX_ERR_ARG, "--batch 16 of 10 examples");
    cr_assert(strstr(ax_error_msg(), "--batch 16"), "%s", ax_error_msg());
    ax_train_dp_free(&d);
    ax_error_clear();
    c.dp_delta = 1e-5;
    cr_assert_eq(ax_train_dp_resolve(&d, &c, 2000), AX_OK, "%s", ax_error_msg());
    cr_assert_float_eq(d.q, 16.0 / 2000, 1e-18);
    cr_assert(strstr(d.unit, "sequence of 128 tokens"), "%s", d.unit);
    ax_train_dp_free(&d);
    snprintf(c.packing, sizeof c.packing, "doc");
    c.dp_sample_rate = 0.25;
    cr_assert_eq(ax_train_dp_resolve(&d, &c, 2000), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(d.q, 0.25);
    cr_assert_str_eq(d.unit, "one document");
    ax_train_dp_free(&d);
    /* --dp-epsilon: the least noise for the run, which meets the target */
    c.dp_noise = 0, c.dp_epsilon = 2, c.dp_delta = 1e-5, c.steps = 100;
    cr_assert_eq(ax_train_dp_resolve(&d, &c, 2000), AX_OK, "%s", ax_error_msg());
    double eps = ax_dp_epsilon_of(0.25, d.sigma, 100, 1e-5, AX_DP_TIGHT, NULL);
    cr_assert(eps <= 2 && eps > 2 * (1 - 1e-6), "epsilon %.10g for the solved sigma %.10g", eps,
              d.sigma);
    ax_train_dp_free(&d);
}

/* ---- training ---- */

static char tmp[256];
static void setup_tmp(void) {
    snprintf(tmp, sizeof tmp, "/tmp/axmem-dptrain-test-%d", (int)getpid());
    ax_rm_rf(tmp);
    cr_assert_eq(ax_mkdir_p(tmp), AX_OK);
}
static void teardown_tmp(void) {
    ax_rm_rf(tmp);
}
TestSuite(dp_train, .init = setup_tmp, .fini = teardown_tmp, .timeout = 120);

static void dp_config(ax_train_config *c, const char *data, const char *out) {
    dp_defaults(c);
    snprintf(c->data, sizeof c->data, "%s", data);
    snprintf(c->out, sizeof c->out, "%s", out);
    snprintf(c->model, sizeof c->model, "tiny");
    c->layers = 2, c->dim = 32, c->heads = 4, c->ffn = 48;
    c->seq_len = 16, c->batch = 4, c->micro_batch = 2;
    c->steps = 8, c->warmup = 2, c->lr = 3e-3;
    c->log_every = 1000, c->threads = 1;
    c->dp_clip = 0.5, c->dp_epsilon = 4, c->dp_delta = 1e-4;
}

typedef struct {
    int n;
    double loss[16], eps[16];
    int64_t examples[16];
} metrics;

static void read_metrics(const char *run, metrics *m) {
    char path[600];
    snprintf(path, sizeof path, "%s/metrics.jsonl", run);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s missing", path);
    char line[8192];
    m->n = 0;
    while (m->n < 16 && fgets(line, sizeof line, f)) {
        ax_json *j = NULL;
        cr_assert_eq(ax_json_parse(line, strlen(line), path, &j), AX_OK);
        int64_t step;
        cr_assert_eq(ax_json_get_i64(j, "step", path, &step), AX_OK);
        cr_assert_eq(step, m->n + 1);
        cr_assert_eq(ax_json_get_num(j, "loss", path, &m->loss[m->n]), AX_OK);
        cr_assert_eq(ax_json_get_num(j, "dp_epsilon", path, &m->eps[m->n]), AX_OK,
                     "line %d lacks dp_epsilon", m->n + 1);
        cr_assert_eq(ax_json_get_i64(j, "dp_examples", path, &m->examples[m->n]), AX_OK);
        ax_json_free(j);
        m->n++;
    }
    fclose(f);
}

static ax_json *read_manifest(const char *run, int step) {
    char path[700];
    snprintf(path, sizeof path, "%s/ckpt/step-%06d/manifest.json", run, step);
    char *text = NULL;
    size_t len = 0;
    cr_assert_eq(ax_read_file(path, &text, &len), AX_OK, "%s", ax_error_msg());
    ax_json *j = NULL;
    cr_assert_eq(ax_json_parse(text, len, path, &j), AX_OK, "%s", ax_error_msg());
    free(text);
    return j;
}

static double num(const ax_json *o, const char *key) {
    double v;
    cr_assert_eq(ax_json_get_num(o, key, "dp state", &v), AX_OK, "no \"%s\"", key);
    return v;
}

/* The examples of the bundled corpus's windows at T = 16, as the run counts them. */
static uint64_t n_windows(const char *data, int T) {
    ax_axd_t *ds = NULL;
    ax_loader_t *l = NULL;
    cr_assert_eq(ax_axd_open(data, 1, &ds), AX_OK);
    cr_assert_eq(ax_loader_create(ds, T, 1, &l), AX_OK);
    uint64_t n = ax_loader_n_windows(l);
    ax_loader_free(l);
    ax_axd_free(ds);
    return n;
}

Test(dp_train, epsilon_in_metrics_and_manifest) {
    char data[300], out[300];
    snprintf(data, sizeof data, "%s/d.axd", tmp);
    snprintf(out, sizeof out, "%s/run", tmp);
    tt_byte_dataset(data, 8, 600);
    ax_train_config c;
    dp_config(&c, data, out);
    ax_train_result r;
    cr_assert_eq(ax_train_run(&c, NULL, &r), AX_OK, "%s", ax_error_msg());
    uint64_t N = n_windows(data, 16);
    double q = 4.0 / (double)N;

    ax_json *man = read_manifest(out, 8);
    const ax_json *dp = ax_json_get(ax_json_get(man, "state"), "dp");
    cr_assert_not_null(dp, "manifest state has no \"dp\"");
    double sigma = num(dp, "noise");
    cr_assert_eq(num(dp, "sample_rate"), q);
    cr_assert_eq(num(dp, "clip"), 0.5);
    cr_assert_eq(num(dp, "delta"), 1e-4);
    cr_assert_eq(num(dp, "steps"), 8);
    cr_assert_eq(num(dp, "examples"), (double)N);
    cr_assert_eq(num(dp, "target_epsilon"), 4);
    const char *unit = "";
    cr_assert_eq(ax_json_get_str(dp, "unit", "dp", &unit), AX_OK);
    cr_assert_str_eq(unit, "one training sequence of 16 tokens");
    cr_assert_eq(ax_json_get_str(dp, "sampling", "dp", &unit), AX_OK);
    cr_assert_str_eq(unit, "poisson");
    /* the noise is the least that meets epsilon 4 over the 8 steps, and the config keeps the
     * flags as given (the global clip off) */
    double eps_end = ax_dp_epsilon_of(q, sigma, 8, 1e-4, AX_DP_TIGHT, NULL);
    cr_assert(eps_end <= 4 && eps_end > 4 * (1 - 1e-6), "epsilon %.12g", eps_end);
    cr_assert_eq(num(dp, "epsilon"), eps_end);
    const ax_json *cfg = ax_json_get(man, "config");
    cr_assert_eq(num(cfg, "dp-clip"), 0.5);
    cr_assert_eq(num(cfg, "dp-epsilon"), 4);
    cr_assert_eq(num(cfg, "dp-delta"), 1e-4);
    cr_assert_eq(num(cfg, "grad-clip"), 0);
    ax_dp_accountant a;
    cr_assert_eq(ax_dp_acct_read_json(&a, ax_json_get(dp, "accountant"), "manifest"), AX_OK, "%s",
                 ax_error_msg());
    cr_assert_eq(a.steps, 8);
    ax_dp_acct_free(&a);

    /* every step: epsilon of that many steps (the closed form), the examples the sampler drew */
    metrics m;
    read_metrics(out, &m);
    cr_assert_eq(m.n, 8);
    int64_t *list = NULL, cap = 0, n = 0;
    for (int s = 0; s < 8; s++) {
        double want = ax_dp_epsilon_of(q, sigma, s + 1, 1e-4, AX_DP_TIGHT, NULL);
        cr_assert(fabs(m.eps[s] - want) <= 1e-12 * want, "step %d: epsilon %.17g, expected %.17g",
                  s + 1, m.eps[s], want);
        cr_assert(s == 0 || m.eps[s] > m.eps[s - 1], "epsilon grows with the steps");
        cr_assert_eq(ax_dp_sample_step((uint64_t)c.seed, s, N, q, &list, &cap, &n), AX_OK);
        cr_assert_eq(m.examples[s], n, "step %d sampled %lld, the sampler draws %lld", s + 1,
                     (long long)m.examples[s], (long long)n);
        cr_assert(isfinite(m.loss[s]));
    }
    free(list);
    cr_assert(r.dp && r.dp_epsilon == eps_end && r.dp_delta == 1e-4, "the result reports it");
    ax_json_free(man);
}

Test(dp_train, resume_continues_epsilon_exactly) {
    char data[300], full[300], part[300];
    snprintf(data, sizeof data, "%s/d.axd", tmp);
    snprintf(full, sizeof full, "%s/full", tmp);
    snprintf(part, sizeof part, "%s/part", tmp);
    tt_byte_dataset(data, 8, 600);
    ax_train_config c;
    dp_config(&c, data, full);
    c.dp_epsilon = 0, c.dp_noise = 0.8; /* and a rate of its own */
    c.dp_sample_rate = 0.02;
    ax_train_result r;
    cr_assert_eq(ax_train_run(&c, NULL, &r), AX_OK, "%s", ax_error_msg());
    /* the same run stopped after 3 steps, then `--out DIR --resume` alone */
    dp_config(&c, data, part);
    c.dp_epsilon = 0, c.dp_noise = 0.8, c.dp_sample_rate = 0.02;
    c.exit_after_steps = 3;
    cr_assert_eq(ax_train_run(&c, NULL, &r), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(r.last_step, 3);
    ax_train_config rc;
    uint8_t was_set[256] = {0};
    cr_assert_eq(ax_cfg_set_defaults(&ax_train_table, &rc), AX_OK);
    snprintf(rc.out, sizeof rc.out, "%s", part);
    rc.resume = 1;
    tt_mark(was_set, "out"), tt_mark(was_set, "resume");
    cr_assert_eq(ax_train_run(&rc, was_set, &r), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(r.first_step, 3);
    metrics a, b;
    read_metrics(full, &a);
    read_metrics(part, &b);
    cr_assert_eq(a.n, 8);
    cr_assert_eq(b.n, 8);
    for (int s = 0; s < 8; s++) {
        cr_assert(a.eps[s] == b.eps[s], "step %d: epsilon %.17g, resumed %.17g", s + 1, a.eps[s],
                  b.eps[s]);
        cr_assert(a.loss[s] == b.loss[s], "step %d: loss %.17g, resumed %.17g", s + 1, a.loss[s],
                  b.loss[s]);
        cr_assert_eq(a.examples[s], b.examples[s]);
    }
    ax_json *ma = read_manifest(full, 8), *mb = read_manifest(part, 8);
    const ax_json *da = ax_json_get(ax_json_get(ma, "state"), "dp"),
                  *db = ax_json_get(ax_json_get(mb, "state"), "dp");
    cr_assert_eq(num(da, "epsilon"), num(db, "epsilon"));
    cr_assert_eq(num(da, "steps"), 8);
    cr_assert_eq(num(db, "steps"), 8);
    cr_assert(r.dp_epsilon == num(da, "epsilon"));
    ax_json_free(ma), ax_json_free(mb);
}

/* A manifest whose accountant was edited is refused on resume, naming the manifest. */
Test(dp_train, resume_refuses_an_edited_accountant) {
    char data[300], out[300], path[700];
    snprintf(data, sizeof data, "%s/d.axd", tmp);
    snprintf(out, sizeof out, "%s/run", tmp);
    tt_byte_dataset(data, 8, 600);
    ax_train_config c;
    dp_config(&c, data, out);
    c.steps = 4, c.exit_after_steps = 2;
    ax_train_result r;
    cr_assert_eq(ax_train_run(&c, NULL, &r), AX_OK, "%s", ax_error_msg());
    snprintf(path, sizeof path, "%s/ckpt/step-000002/manifest.json", out);
    char *text = NULL;
    size_t len = 0;
    cr_assert_eq(ax_read_file(path, &text, &len), AX_OK);
    char *at = strstr(text, "\"accountant\":{\"steps\":2");
    cr_assert_not_null(at, "no accountant in %s", path);
    at[strlen("\"accountant\":{\"steps\":")] = '1'; /* one step forgotten */
    at = strstr(at, "\"steps\":2}");
    cr_assert_not_null(at);
    at[strlen("\"steps\":")] = '1';
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    free(text);
    ax_train_config rc;
    uint8_t was_set[256] = {0};
    cr_assert_eq(ax_cfg_set_defaults(&ax_train_table, &rc), AX_OK);
    snprintf(rc.out, sizeof rc.out, "%s", out);
    rc.resume = 1;
    tt_mark(was_set, "out"), tt_mark(was_set, "resume");
    ax_error_clear();
    cr_assert_eq(ax_train_run(&rc, was_set, &r), AX_ERR_CORRUPT, "%s", ax_error_msg());
    cr_assert(strstr(ax_error_msg(), "step-000002") && strstr(ax_error_msg(), "DP-SGD"), "%s",
              ax_error_msg());
}

/* ---- the model's two DP calls, as training uses them (the contract, on 1x1x1x1) ----
 * Against per-example gradients from the ordinary forward and backward of each row alone
 * (dscale 1 / its targets: the gradient of the row's mean loss). */

typedef struct {
    ax_model_t *m;
    int64_t n;
    int T;
    int32_t in[3 * 8], tg[3 * 8];
    uint8_t mask[3 * 8];
    float *g[2]; /* rows 0 and 1 */
    double norm[2], loss[2];
} dp_fixture;

static void dp_fixture_init(dp_fixture *f) {
    ax_model_config c = {.n_layers = 2,
                         .dim = 16,
                         .n_heads = 2,
                         .ffn = 24,
                         .vocab = 260,
                         .tie_embeddings = 1,
                         .rope_theta = 10000.0f,
                         .norm_eps = 1e-5f};
    f->T = 8;
    cr_assert_eq(ax_model_create(&c, 3, f->T, &f->m), AX_OK, "%s", ax_error_msg());
    ax_model_init(f->m, 11);
    f->n = ax_model_n_local(f->m);
    for (int i = 0; i < 3 * 8; i++) {
        f->in[i] = (i * 37 + 3) % 260, f->tg[i] = (i * 53 + 1) % 260;
        f->mask[i] = i < 16 && i % 8 != 2; /* rows 0, 1: 7 targets each; row 2: padding */
    }
    for (int r = 0; r < 2; r++) {
        f->g[r] = malloc((size_t)f->n * sizeof(float));
        ax_model_zero_grad(f->m);
        f->loss[r] =
            ax_model_forward(f->m, f->in + r * 8, f->tg + r * 8, f->mask + r * 8, 1, 1.0f / 7, 1);
        ax_model_backward(f->m);
        cr_assert_eq(ax_model_read_grads(f->m, f->g[r], 0, f->n), AX_OK);
        double s = 0;
        for (int64_t e = 0; e < f->n; e++) s += (double)f->g[r][e] * f->g[r][e];
        f->norm[r] = sqrt(s);
    }
}

static void dp_fixture_free(dp_fixture *f) {
    free(f->g[0]), free(f->g[1]);
    ax_model_free(f->m);
}

/* the model's gradient against w0 g0 + w1 g1, relative to the largest element */
static void expect_grads(dp_fixture *f, double w0, double w1) {
    float *got = malloc((size_t)f->n * sizeof(float));
    cr_assert_eq(ax_model_read_grads(f->m, got, 0, f->n), AX_OK);
    double worst = 0, top = 0;
    for (int64_t e = 0; e < f->n; e++) {
        double want = w0 * f->g[0][e] + w1 * f->g[1][e];
        top = fmax(top, fabs(want));
        worst = fmax(worst, fabs(got[e] - want));
    }
    cr_assert(top > 0 && worst <= 1e-5 * top, "gradient off by %g (largest %g)", worst, top);
    free(got);
}

Test(dp_contract, unclipped_clipped_and_accumulated_sums) {
    dp_fixture f;
    dp_fixture_init(&f);
    float norms[3] = {-1, -1, -1};
    /* a clip above both norms: scale x the plain sum; the norms and the loss of the rows */
    ax_model_zero_grad(f.m);
    double loss = ax_model_dp_micro(f.m, f.in, f.tg, f.mask, 3, 1e6f, 0.5f, 1, norms);
    expect_grads(&f, 0.5, 0.5);
    for (int r = 0; r < 2; r++)
        cr_assert(fabs(norms[r] - f.norm[r]) <= 1e-5 * f.norm[r], "row %d: norm %g, direct %g", r,
                  norms[r], f.norm[r]);
    cr_assert_eq(norms[2], 0, "a padding row has norm 0");
    cr_assert(fabs(loss - (f.loss[0] + f.loss[1])) <= 1e-5 * loss, "loss %g", loss);
    /* a clip below both: each row contributes C g / ||g|| */
    double C = 0.5 * fmin(f.norm[0], f.norm[1]);
    ax_model_zero_grad(f.m);
    ax_model_dp_micro(f.m, f.in, f.tg, f.mask, 3, (float)C, 2.0f, 1, NULL);
    expect_grads(&f, 2 * C / f.norm[0], 2 * C / f.norm[1]);
    /* two micro-batches of one row each accumulate into the same sum */
    uint8_t only0[24], only1[24];
    for (int i = 0; i < 24; i++) only0[i] = i < 8 && f.mask[i], only1[i] = i >= 8 && f.mask[i];
    ax_model_zero_grad(f.m);
    ax_model_dp_micro(f.m, f.in, f.tg, only0, 3, (float)C, 1.0f, 0, NULL);
    ax_model_dp_micro(f.m, f.in, f.tg, only1, 3, (float)C, 1.0f, 1, NULL);
    expect_grads(&f, C / f.norm[0], C / f.norm[1]);
    dp_fixture_free(&f);
}

Test(dp_contract, noise_has_its_standard_deviation_and_is_keyed) {
    dp_fixture f;
    dp_fixture_init(&f);
    int64_t n = f.n;
    float *a = malloc((size_t)n * sizeof(float)), *b = malloc((size_t)n * sizeof(float));
    ax_model_zero_grad(f.m);
    cr_assert_eq(ax_model_dp_noise(f.m, 0.25, 9, 4), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(ax_model_read_grads(f.m, a, 0, n), AX_OK);
    double s1 = 0, s2 = 0;
    for (int64_t e = 0; e < n; e++) s1 += a[e], s2 += (double)a[e] * a[e];
    double mean = s1 / n, var = s2 / n - mean * mean, sd = 0.25;
    /* standard errors: sd / sqrt(n) for the mean, sd^2 sqrt(2 / n) for the variance */
    cr_assert(fabs(mean) < 5 * sd / sqrt((double)n), "mean %g over %lld draws", mean, (long long)n);
    cr_assert(fabs(var - sd * sd) < 5 * sd * sd * sqrt(2.0 / n), "variance %g, expected %g", var,
              sd * sd);
    /* the same key draws the same noise; another step another */
    ax_model_zero_grad(f.m);
    cr_assert_eq(ax_model_dp_noise(f.m, 0.25, 9, 4), AX_OK);
    cr_assert_eq(ax_model_read_grads(f.m, b, 0, n), AX_OK);
    cr_assert(!memcmp(a, b, (size_t)n * sizeof(float)), "(seed, step) draws the same noise");
    ax_model_zero_grad(f.m);
    cr_assert_eq(ax_model_dp_noise(f.m, 0.25, 9, 5), AX_OK);
    cr_assert_eq(ax_model_read_grads(f.m, b, 0, n), AX_OK);
    int64_t same = 0;
    for (int64_t e = 0; e < n; e++) same += a[e] == b[e];
    cr_assert(same < n / 100, "step 5 repeats step 4's noise at %lld of %lld", (long long)same,
              (long long)n);
    free(a), free(b);
    dp_fixture_free(&f);
}
