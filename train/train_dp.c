/* DP-SGD settings, state and accounting of a training run (train/train_dp.h). */
#include "train/train_dp.h"
#include "lib/core/log.h"
#include "lib/core/rng.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the noise's key, apart from the seed's other uses (initialisation, sampling) */
#define DP_NOISE_KEY 0x44502d4e4f495345ULL /* "DP-NOISE" */

ax_status ax_train_dp_resolve(ax_train_dp *d, const ax_train_config *c, uint64_t n_examples) {
    memset(d, 0, sizeof *d);
    ax_dp_acct_init(&d->acct);
    int docs = !strcmp(c->packing, "doc");
    const char *what = docs ? "documents" : "training sequences";
    d->examples = (int64_t)n_examples;
    double n = (double)n_examples;
    if (docs)
        snprintf(d->unit, sizeof d->unit, "one document");
    else
        snprintf(d->unit, sizeof d->unit, "one training sequence of %lld tokens",
                 (long long)c->seq_len);
    if (c->dp_sample_rate > 0) {
        d->q = c->dp_sample_rate;
    } else if ((double)c->batch > n) {
        return ax_errorf(AX_ERR_ARG,
                         "DP-SGD samples each example with probability --batch / examples, but "
                         "--batch %lld is more than the %" PRIu64 " %s of --data %s; lower "
                         "--batch or give --dp-sample-rate",
                         (long long)c->batch, n_examples, what, c->data);
    } else {
        d->q = (double)c->batch / n;
    }
    if (!(c->dp_delta < 1.0 / n))
        return ax_errorf(AX_ERR_ARG,
                         "--dp-delta %g is not below 1 / %" PRIu64 " (the %s of --data %s): a "
                         "delta that large permits publishing an example outright; use at most "
                         "%.1e",
                         c->dp_delta, n_examples, what, c->data, 0.1 / n);
    d->clip = c->dp_clip;
    d->delta = c->dp_delta;
    d->target_epsilon = c->dp_epsilon;
    if (c->dp_noise > 0) {
        d->sigma = c->dp_noise;
    } else if (ax_dp_noise_for(d->q, c->steps, c->dp_epsilon, c->dp_delta, AX_DP_TIGHT,
                               &d->sigma) != AX_OK) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", ax_error_msg());
        ax_error_clear(); /* the first message wins: replace it with the fuller one */
        return ax_errorf(AX_ERR_ARG,
                         "--dp-epsilon %g with --dp-delta %g over --steps %lld at sampling rate "
                         "%g: %s; raise --dp-epsilon or lower --steps or the rate",
                         c->dp_epsilon, c->dp_delta, (long long)c->steps, d->q, msg);
    }
    d->sample_seed = (uint64_t)c->seed;
    d->noise_seed = ax_rng_u64((uint64_t)c->seed, DP_NOISE_KEY, 0);
    return AX_OK;
}

static ax_status corrupt(const char *path, const char *what) {
    return ax_errorf(AX_ERR_CORRUPT,
                     "%s/manifest.json: the DP-SGD state (\"dp\") %s; the manifest was edited or "
                     "damaged, so its privacy accounting cannot continue: move it aside (mv %s "
                     "%s.bad) and --resume from the checkpoint before it, or retrain",
                     path, what, path, path);
}

ax_status ax_train_dp_resume(ax_train_dp *d, const ax_json *state, long step, const char *path) {
    const ax_json *o = ax_json_get(state, "dp"), *acct = ax_json_get(o, "accountant");
    if (!o || !acct) return corrupt(path, "is missing");
    double q, sigma;
    if (ax_json_get_num(o, "sample_rate", path, &q) != AX_OK ||
        ax_json_get_num(o, "noise", path, &sigma) != AX_OK) {
        ax_error_clear();
        return corrupt(path, "lacks \"sample_rate\" or \"noise\"");
    }
    if (q != d->q) {
        char msg[160];
        snprintf(msg, sizeof msg, "has sampling rate %.17g where the run's settings give %.17g", q,
                 d->q);
        return corrupt(path, msg);
    }
    if (!(sigma > 0 && isfinite(sigma))) return corrupt(path, "has no positive noise multiplier");
    if (sigma != d->sigma) {
        if (!(d->target_epsilon > 0)) return corrupt(path, "differs from --dp-noise");
        AX_WARN("the noise multiplier %.6g of the resumed run is kept (solved for --dp-epsilon %g "
                "over its original length); over the new --steps the least that meets the "
                "target is %.6g, so epsilon will end at another value than %g",
                sigma, d->target_epsilon, d->sigma, d->target_epsilon);
        d->sigma = sigma;
    }
    ax_dp_acct_free(&d->acct);
    if (ax_dp_acct_read_json(&d->acct, acct, path) != AX_OK) {
        char msg[768];
        snprintf(msg, sizeof msg, "is inconsistent (%s)", ax_error_msg());
        ax_error_clear(); /* the first message wins: replace it with the fuller one */
        return corrupt(path, msg);
    }
    if (d->acct.steps != step) {
        char msg[160];
        snprintf(msg, sizeof msg, "has accounted %" PRId64 " steps, not the checkpoint's %ld",
                 d->acct.steps, step);
        return corrupt(path, msg);
    }
    d->epsilon = ax_dp_acct_epsilon(&d->acct, d->delta, AX_DP_TIGHT, NULL);
    return AX_OK;
}

ax_status ax_train_dp_account(ax_train_dp *d) {
    AX_CHECK(ax_dp_acct_add(&d->acct, d->q, d->sigma, 1));
    d->epsilon = ax_dp_acct_epsilon(&d->acct, d->delta, AX_DP_TIGHT, NULL);
    return AX_OK;
}

void ax_train_dp_write_state(const ax_train_dp *d, ax_jw *w) {
    ax_jw_key(w, "dp");
    ax_jw_obj_begin(w);
    ax_jw_key(w, "unit"), ax_jw_str(w, d->unit);
    ax_jw_key(w, "sampling"), ax_jw_str(w, "poisson");
    ax_jw_key(w, "clip"), ax_jw_num(w, d->clip);
    ax_jw_key(w, "noise"), ax_jw_num(w, d->sigma);
    ax_jw_key(w, "sample_rate"), ax_jw_num(w, d->q);
    ax_jw_key(w, "delta"), ax_jw_num(w, d->delta);
    ax_jw_key(w, "epsilon"), ax_jw_num(w, d->epsilon);
    if (d->target_epsilon > 0) ax_jw_key(w, "target_epsilon"), ax_jw_num(w, d->target_epsilon);
    ax_jw_key(w, "examples"), ax_jw_int(w, d->examples);
    ax_jw_key(w, "expected_batch"), ax_jw_num(w, d->q * (double)d->examples);
    ax_jw_key(w, "steps"), ax_jw_int(w, d->acct.steps);
    ax_jw_key(w, "conversion"), ax_jw_str(w, "tight");
    ax_jw_key(w, "accountant"), ax_dp_acct_write_json(&d->acct, w);
    ax_jw_obj_end(w);
}

void ax_train_dp_free(ax_train_dp *d) {
    ax_dp_acct_free(&d->acct);
    free(d->sample);
    d->sample = NULL, d->cap = d->n = 0;
}
