/* Settling overlap on one-host axes by timing (lib/dist/overlap_trial.h): which axes are timed
 * (ax_overlap_measurable), the choice from pairs of steps (ax_overlap_trial_pick), switching an
 * axis between steps (ax_overlap_set_axis), and a trial on a grid with nothing to time. The
 * trial's steps on a real 2-rank axis run in tests/mpi/train.sh. */
#include <criterion/criterion.h>
#include <string.h>

#include "lib/dist/grid.h"
#include "lib/dist/overlap.h"
#include "lib/dist/overlap_trial.h"

Test(overlap_trial, measurable_only_where_the_rule_guesses) {
    /* a tensor axis of 2 ranks on one host, 2 ranks x 1 thread on 2 cores: the rule says off,
     * timing can tell */
    for (int a = AX_AXIS_X; a <= AX_AXIS_Z; a++)
        cr_assert_eq(ax_overlap_measurable(AX_OVERLAP_AUTO, (ax_axis)a, 2, 1, 2, 1, 2, 0), 1);
    /* the data all-reduce ends the step: nothing runs behind it */
    cr_assert_eq(ax_overlap_measurable(AX_OVERLAP_AUTO, AX_AXIS_DATA, 2, 1, 2, 1, 2, 0), 0);
    /* --no-overlap and forced are the user's word; across hosts and over NCCL the rule is on */
    cr_assert_eq(ax_overlap_measurable(AX_OVERLAP_OFF, AX_AXIS_Y, 2, 1, 2, 1, 2, 0), 0);
    cr_assert_eq(ax_overlap_measurable(AX_OVERLAP_FORCE, AX_AXIS_Y, 2, 1, 2, 1, 2, 0), 0);
    cr_assert_eq(ax_overlap_measurable(AX_OVERLAP_AUTO, AX_AXIS_Y, 4, 2, 2, 1, 8, 0), 0);
    cr_assert_eq(ax_overlap_measurable(AX_OVERLAP_AUTO, AX_AXIS_Y, 2, 1, 2, 1, 2, 1), 0);
    /* placement unknown, one rank, or more ranks x threads than cores: off stays off */
    cr_assert_eq(ax_overlap_measurable(AX_OVERLAP_AUTO, AX_AXIS_Y, 2, 0, 2, 1, 2, 0), 0);
    cr_assert_eq(ax_overlap_measurable(AX_OVERLAP_AUTO, AX_AXIS_Y, 1, 1, 1, 1, 2, 0), 0);
    cr_assert_eq(ax_overlap_measurable(AX_OVERLAP_AUTO, AX_AXIS_Y, 2, 1, 8, 1, 2, 0), 0);
    cr_assert_eq(ax_overlap_measurable(AX_OVERLAP_AUTO, AX_AXIS_Y, 2, 1, 2, 2, 2, 0), 0);
    /* every measurable case is one the rule turns off */
    char why[160];
    cr_assert_eq(ax_overlap_decide(AX_OVERLAP_AUTO, 2, 1, 2, 1, 2, 0, why, sizeof why), 0);
}

static int pick(const double *on, const double *off, int n, char *why) {
    return ax_overlap_trial_pick(on, off, n, AX_TRIAL_MARGIN, why, 256);
}

Test(overlap_trial, pick_needs_every_pair_and_the_margin) {
    char why[256];
    const double off[4] = {1.00, 1.02, 0.98, 1.01};
    /* 5% faster in every pair: on, and the reason says by how much */
    const double on5[4] = {0.95, 0.969, 0.931, 0.9595};
    cr_assert_eq(pick(on5, off, 4, why), 1, "%s", why);
    cr_assert(!strncmp(why, "on: measured", 12) && strstr(why, "0.950x") &&
                  strstr(why, "4 of them faster"),
              "%s", why);
    /* the same gain but one pair the other way: a tie by chance, off */
    const double on_mixed[4] = {0.95, 0.969, 0.99, 0.9595};
    cr_assert_eq(pick(on_mixed, off, 4, why), 0, "%s", why);
    cr_assert(!strncmp(why, "off: measured", 13) && strstr(why, "3 of them faster"), "%s", why);
    /* every pair faster, but by 1%: inside the margin, off */
    const double on1[4] = {0.99, 1.0098, 0.9702, 0.9999};
    cr_assert_eq(pick(on1, off, 4, why), 0, "%s", why);
    /* slower: off; nothing timed (or a zero time): off */
    const double on_slow[4] = {1.05, 1.07, 1.03, 1.06};
    cr_assert_eq(pick(on_slow, off, 4, why), 0, "%s", why);
    cr_assert_eq(pick(on5, off, 0, why), 0, "%s", why);
    const double off0[4] = {1.0, 0.0, 1.0, 1.0};
    cr_assert_eq(pick(on5, off0, 4, why), 0, "%s", why);
    /* the median resists one wild pair in the direction of the gain */
    const double on_wild[4] = {0.95, 0.20, 0.931, 0.9595};
    cr_assert_eq(pick(on_wild, off, 4, why), 1, "%s", why);
    cr_assert(strstr(why, "0.95"), "%s", why);
    cr_assert_eq(ax_overlap_trial_pick(on5, off, 4, AX_TRIAL_MARGIN, NULL, 0), 1);
}

Test(overlap_trial, set_axis_between_steps_only) {
    ax_grid_t *g = NULL;
    cr_assert_eq(ax_grid_create_serial(&g), AX_OK);
    ax_overlap *ov = NULL;
    cr_assert_eq(ax_overlap_create(g, AX_OVERLAP_AUTO, 1, &ov), AX_OK);
    /* a 1-rank axis never overlaps, whatever it is told; the reason is what was given */
    cr_assert_eq(ax_overlap_set_axis(ov, AX_AXIS_Y, 1, "on: told so"), AX_OK);
    cr_assert_eq(ax_overlap_axis_on(ov, AX_AXIS_Y), 0);
    cr_assert_eq(ax_overlap_enabled(ov), 0);
    cr_assert_str_eq(ax_overlap_axis_why(ov, AX_AXIS_Y), "on: told so");
    /* an issued slot (complete, not yet waited for) pins the schedule */
    float buf[4] = {1, 2, 3, 4};
    cr_assert_eq(ax_overlap_allreduce(ov, 0, AX_AXIS_Y, buf, 4, AX_DT_F32, AX_OP_SUM), AX_OK);
    cr_assert_eq(ax_overlap_set_axis(ov, AX_AXIS_Y, 0, "off"), AX_ERR_INTERNAL);
    cr_assert(strstr(ax_error_msg(), "in flight"), "%s", ax_error_msg());
    cr_assert_eq(ax_overlap_wait_all(ov), AX_OK);
    cr_assert_eq(ax_overlap_set_axis(ov, AX_AXIS_Y, 0, "off: again"), AX_OK);
    cr_assert_eq(ax_overlap_set_axis(ov, (ax_axis)AX_AXIS_COUNT, 0, "x"), AX_ERR_INTERNAL);
    /* nothing to time on a serial grid: the trial is inactive and its calls are no-ops */
    ax_overlap_trial tr;
    cr_assert_eq(ax_overlap_trial_init(&tr, g, ov, AX_OVERLAP_AUTO, 1000), 0);
    cr_assert_eq(ax_overlap_trial_active(&tr), 0);
    int settled = 7;
    cr_assert_eq(ax_overlap_trial_before(&tr), AX_OK);
    cr_assert_eq(ax_overlap_trial_after(&tr, 0.5, &settled), AX_OK);
    cr_assert_eq(settled, -1);
    ax_overlap_free(ov);
    ax_grid_free(g);
}
