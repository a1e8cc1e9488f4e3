/* `axmem dp`: the privacy accountant on its own (train/dp_accountant.h): epsilon for DP-SGD
 * settings, the noise multiplier for a target epsilon, or delta for an epsilon. */
#include "cli/commands.h"
#include "lib/core/config.h"
#include "lib/core/json.h"
#include "lib/core/status.h"
#include "train/dp_accountant.h"

#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    double sample_rate, epochs, noise, epsilon, delta;
    int64_t batch, examples, steps;
    char conversion[AX_CFG_STR_MAX];
    int json;
} dp_flags;

#define F(field) offsetof(dp_flags, field)
static const ax_cfg_entry entries[] = {
    {"sample-rate", AX_CFG_FLOAT, F(sample_rate), "0", 0, 1,
     "q: each example joins a step's batch independently with this probability (Poisson "
     "sampling), or give --batch and --examples"},
    {"batch", AX_CFG_INT, F(batch), "0", 0, 9e15, "expected batch size: q = batch / examples"},
    {"examples", AX_CFG_INT, F(examples), "0", 0, 9e15, "examples in the training set"},
    {"steps", AX_CFG_INT, F(steps), "0", 0, 9e15, "optimizer steps, or give --epochs"},
    {"epochs", AX_CFG_FLOAT, F(epochs), "0", 0, 1e9,
     "passes over the data: steps = epochs / q, rounded up (may be fractional)"},
    {"noise", AX_CFG_FLOAT, F(noise), "0", 0, 1e6,
     "noise multiplier sigma (train --dp-noise): the noise's standard deviation over the "
     "clipping norm"},
    {"epsilon", AX_CFG_FLOAT, F(epsilon), "0", 0, 1e6, "target epsilon (train --dp-epsilon)"},
    {"delta", AX_CFG_FLOAT, F(delta), "0", 0, 1, "delta, in (0, 1) (train --dp-delta)"},
    {"conversion", AX_CFG_CHOICE, F(conversion), "tight|classic", 1, 0,
     "RDP -> (epsilon, delta): tight (Balle et al. 2020; Opacus >= 1.0, dp_accounting) or "
     "classic (Mironov 2017; Abadi et al. 2016, older TF Privacy and Opacus figures)"},
    AX_CFG_JSON_ENTRY(F, "print one JSON object instead of text"),
};
#undef F

static const ax_cfg_table table = {
    .usage = "axmem dp (--sample-rate Q | --batch B --examples N) (--steps T | --epochs E) "
             "[flags]",
    .summary =
        "The privacy of DP-SGD with Poisson sampling: Renyi DP of the subsampled Gaussian\n"
        "mechanism (Mironov et al. 2019) composed over the steps and converted to (epsilon,\n"
        "delta) at the best of 156 orders (1.1 to 10.9 by 0.1, 11 to 63, 128, 256, 512, 1024).\n"
        "Give two of --noise, --epsilon and --delta for the third: --noise and --delta print\n"
        "epsilon; --epsilon and --delta the least noise multiplier that meets them (rounded\n"
        "up, with the epsilon it gives); --noise and --epsilon the delta.",
    .entries = entries,
    .n = (int)(sizeof entries / sizeof entries[0]),
};

static int usage_err(const char *msg) {
    fprintf(stderr, "axmem dp: %s; see 'axmem dp --help'\n", msg);
    return 2;
}

static int was(const uint8_t *set, const char *name) {
    return set[ax_cfg_find(&table, name) - table.entries];
}

/* x rounded up to 8 significant digits, so the printed noise never undercuts the target */
static double round_up_8(double x) {
    char buf[32];
    snprintf(buf, sizeof buf, "%.7e", x);
    double r = strtod(buf, NULL);
    if (r < x) {
        double ulp = pow(10, floor(log10(x)) - 7);
        snprintf(buf, sizeof buf, "%.7e", r + ulp);
        r = strtod(buf, NULL);
    }
    return r;
}

int ax_cmd_dp(int argc, char **argv) {
    dp_flags fl;
    uint8_t set[sizeof entries / sizeof entries[0]] = {0};
    int help = 0;
    ax_status st = ax_cfg_set_defaults(&table, &fl);
    if (st == AX_OK) st = ax_cfg_parse_argv(&table, &fl, argc, argv, set, &help);
    if (st != AX_OK) {
        fprintf(stderr, "axmem dp: %s\n", ax_error_msg());
        return 2;
    }
    if (help) {
        ax_cfg_print_help(&table, stdout);
        return 0;
    }
    int by_rate = was(set, "sample-rate"), by_batch = was(set, "batch") || was(set, "examples");
    if (by_rate == by_batch)
        return usage_err("give the sampling rate as --sample-rate Q or as --batch B --examples N");
    if (by_batch && !(was(set, "batch") && was(set, "examples")))
        return usage_err("--batch and --examples go together");
    if (by_batch && fl.batch > fl.examples) return usage_err("--batch must not exceed --examples");
    double q = by_rate ? fl.sample_rate : (double)fl.batch / (double)fl.examples;
    if (!(q > 0)) return usage_err("the sampling rate must be above 0");
    if (was(set, "steps") == was(set, "epochs"))
        return usage_err("give the length as --steps T or as --epochs E");
    int64_t steps = fl.steps;
    if (was(set, "epochs")) {
        double t = by_batch ? fl.epochs * (double)fl.examples / (double)fl.batch : fl.epochs / q;
        t = fabs(t - nearbyint(t)) <= 1e-9 * t ? nearbyint(t) : ceil(t); /* 60 / 0.01 is 6000 */
        if (!(t >= 1 && t < 9e15)) return usage_err("--epochs gives no whole step");
        steps = (int64_t)t;
    }
    int n_given = was(set, "noise") + was(set, "epsilon") + was(set, "delta");
    if (n_given != 2)
        return usage_err("give two of --noise, --epsilon and --delta: the third is computed");
    if (was(set, "delta") && !(fl.delta > 0 && fl.delta < 1))
        return usage_err("--delta must lie strictly between 0 and 1");
    if (was(set, "epsilon") && !(fl.epsilon > 0)) return usage_err("--epsilon must be above 0");
    if (was(set, "noise") && !(fl.noise > 0))
        return usage_err("--noise must be above 0 (without noise there is no guarantee)");
    ax_dp_conversion conv = strcmp(fl.conversion, "classic") ? AX_DP_TIGHT : AX_DP_CLASSIC;

    double noise = fl.noise, eps = fl.epsilon, delta = fl.delta, order = 0;
    const char *solved = !was(set, "noise") ? "noise" : !was(set, "epsilon") ? "epsilon" : "delta";
    if (!was(set, "noise")) {
        if (ax_dp_noise_for(q, steps, eps, delta, conv, &noise) != AX_OK) {
            fprintf(stderr, "axmem dp: %s\n", ax_error_msg());
            return 1;
        }
        noise = round_up_8(noise);
    }
    double rdp[AX_DP_N_ORDERS];
    ax_dp_rdp_orders(q, noise, ax_dp_orders, AX_DP_N_ORDERS, rdp);
    for (int k = 0; k < AX_DP_N_ORDERS; k++) rdp[k] *= (double)steps;
    if (was(set, "delta"))
        eps = ax_dp_epsilon(ax_dp_orders, rdp, AX_DP_N_ORDERS, delta, conv, &order);
    else
        delta = ax_dp_delta(ax_dp_orders, rdp, AX_DP_N_ORDERS, eps, conv, &order);
    int edge = order == ax_dp_orders[0] || order == ax_dp_orders[AX_DP_N_ORDERS - 1];
    if (fl.json) {
        ax_jw w;
        ax_jw_init(&w);
        ax_jw_obj_begin(&w);
        ax_jw_key(&w, "sample_rate");
        ax_jw_num(&w, q);
        ax_jw_key(&w, "steps");
        ax_jw_int(&w, steps);
        ax_jw_key(&w, "noise");
        ax_jw_num(&w, noise);
        ax_jw_key(&w, "epsilon");
        ax_jw_num(&w, eps);
        ax_jw_key(&w, "delta");
        ax_jw_num(&w, delta);
        ax_jw_key(&w, "order");
        ax_jw_num(&w, order);
        ax_jw_key(&w, "conversion");
        ax_jw_str(&w, fl.conversion);
        ax_jw_key(&w, "solved");
        ax_jw_str(&w, solved);
        ax_jw_obj_end(&w);
        const char *t = ax_jw_text(&w);
        if (t) printf("%s\n", t);
        ax_jw_free(&w);
        if (!t) {
            fprintf(stderr, "axmem dp: out of memory writing JSON\n");
            return 1;
        }
    } else {
        printf("sampling   q = %.8g per example and step (Poisson)", q);
        if (by_batch) printf(", batch %" PRId64 " of %" PRId64, fl.batch, fl.examples);
        printf("\nsteps      %" PRId64 "\n", steps);
        printf("noise      %.8g%s\n", noise,
               strcmp(solved, "noise") ? "" : " (the least that meets the target, rounded up)");
        printf("privacy    (epsilon %.6g, delta %.6g)-DP at RDP order %g, %s conversion\n", eps,
               delta, order, fl.conversion);
    }
    if (edge)
        fprintf(stderr,
                "axmem dp: note: the best order is at the end of the list (%g); a wider list might "
                "give a smaller bound\n",
                order);
    if (fflush(stdout) != 0) {
        fprintf(stderr, "axmem dp: cannot write to stdout\n");
        return 1;
    }
    return 0;
}
