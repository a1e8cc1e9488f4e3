/* lib/dist/overlap_trial.h: timing both schedules on the axes the rule cannot settle. */
#include "lib/dist/overlap_trial.h"

#include <stdio.h>
#include <string.h>

/* the schedule of timed step i of an axis: the Thue-Morse order on off off on off on on off off
 * on on off, adjacent pairs (0,1) (2,3) ... each one of both, and the on and off positions
 * with equal sums (a linear drift cancels) */
static int pattern_on(int i) {
    static const int p[AX_TRIAL_STEPS] = {1, 0, 0, 1, 0, 1, 1, 0, 0, 1, 1, 0};
    return p[i];
}

static double median(const double *x, int n) {
    double s[AX_TRIAL_PAIRS * 4] = {0};
    if (n <= 0) return 0.0;
    if (n > (int)(sizeof s / sizeof s[0])) n = (int)(sizeof s / sizeof s[0]);
    memcpy(s, x, sizeof(double) * (size_t)n);
    for (int i = 1; i < n; i++) /* insertion sort: a handful of values */
        for (int j = i; j > 0 && s[j - 1] > s[j]; j--) {
            double t = s[j];
            s[j] = s[j - 1], s[j - 1] = t;
        }
    return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

int ax_overlap_trial_pick(const double *on, const double *off, int n, double margin, char *why,
                          size_t cap) {
    char tmp[8];
    if (!why || !cap) why = tmp, cap = sizeof tmp;
    double r[AX_TRIAL_PAIRS * 4] = {0};
    int k = 0, faster = 0;
    for (int i = 0; i < n && k < (int)(sizeof r / sizeof r[0]); i++)
        if (off[i] > 0 && on[i] > 0) r[k] = on[i] / off[i], faster += r[k++] < 1.0;
    double ratio = median(r, k);
    /* every pair must agree (a sign test: 1 in 2^n, 1 in 64 for six pairs, by chance when the
     * schedules tie) and the median gain must clear the margin */
    int pick = k > 0 && k == n && faster == k && ratio <= 1.0 - margin;
    snprintf(why, cap,
             "%s: measured, overlapped steps %.3fx the blocking ones (median of %d adjacent "
             "pairs, %d of them faster overlapped; %.4g s against %.4g s a step; kept only when "
             "all are and the median is <= %.2fx)",
             pick ? "on" : "off", ratio, k, faster, median(on, n), median(off, n), 1.0 - margin);
    return pick;
}

int ax_overlap_trial_init(ax_overlap_trial *tr, ax_grid_t *g, ax_overlap *ov, int mode,
                          long steps_left) {
    memset(tr, 0, sizeof *tr);
    tr->g = g, tr->ov = ov;
    int n = 0;
    for (int a = 0; a < AX_AXIS_COUNT; a++)
        if (ax_overlap_measurable_axis(g, mode, (ax_axis)a)) tr->axes[n++] = (ax_axis)a;
    if (steps_left < AX_TRIAL_WARMUP + (long)n * AX_TRIAL_STEPS) n = 0;
    tr->n = n;
    tr->warm = n > 0;
    return n;
}

int ax_overlap_trial_active(const ax_overlap_trial *tr) {
    return tr->cur < tr->n;
}

ax_status ax_overlap_trial_before(ax_overlap_trial *tr) {
    if (!ax_overlap_trial_active(tr) || tr->warm) return AX_OK;
    ax_axis a = tr->axes[tr->cur];
    tr->on_now = pattern_on(tr->seen);
    char why[256];
    snprintf(why, sizeof why, "%s: timing both schedules (step %d of %d)",
             tr->on_now ? "on" : "off", tr->seen + 1, AX_TRIAL_STEPS);
    return ax_overlap_set_axis(tr->ov, a, tr->on_now, why);
}

ax_status ax_overlap_trial_after(ax_overlap_trial *tr, double dt, int *settled) {
    *settled = -1;
    if (!ax_overlap_trial_active(tr)) return AX_OK;
    if (tr->warm) { /* the first step pays page faults and caches: not timed */
        tr->warm = 0;
        return AX_OK;
    }
    AX_CHECK(ax_coll_allreduce(tr->g, AX_AXIS_WORLD, &dt, 1, AX_DT_F64, AX_OP_MAX));
    tr->t[tr->on_now][tr->seen / 2] = dt;
    if (++tr->seen < AX_TRIAL_STEPS) return AX_OK;
    ax_axis a = tr->axes[tr->cur];
    char why[256];
    int on =
        ax_overlap_trial_pick(tr->t[1], tr->t[0], AX_TRIAL_PAIRS, AX_TRIAL_MARGIN, why, sizeof why);
    AX_CHECK(ax_overlap_set_axis(tr->ov, a, on, why));
    *settled = (int)a;
    tr->cur++, tr->seen = 0;
    return AX_OK;
}
