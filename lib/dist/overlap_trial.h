/* Settling AUTO's one-host guess by timing both schedules (docs/grid.md, "Overlap").
 *
 * On an axis whose ranks share one host (ax_overlap_measurable) the rule cannot tell whether
 * overlapping wins: the shared-memory copies run on the ranks' own cores, and the chunked dW
 * GEMMs and polling cost something that depends on the machine. A training run with overlap
 * AUTO therefore times its first steps: after one warm-up step, per such axis, twelve steps
 * with that axis overlapped or blocking in the Thue-Morse order on off off on off on on off off
 * on on off (the other axes as decided so far): six adjacent pairs, so a slow drift (caches,
 * clocks, a neighbour) cancels within each pair, and a linear trend over the twelve cancels too.
 * The slowest rank's wall time of each step counts (one MAX all-reduce over the world per timed
 * step, so every rank decides the same). The axis keeps overlap only if every pair's overlapped
 * step was the faster one and the median over the pairs of (overlapped step / blocking step) is at
 * most 1 - AX_TRIAL_MARGIN; otherwise it blocks, as the rule said. Either schedule gives the same
 * bits, so the switch changes the time of a run and never its results. A run too short for the
 * trial keeps the rule's answer. */
#pragma once
#include "lib/dist/overlap.h"

enum { AX_TRIAL_PAIRS = 6, AX_TRIAL_STEPS = 2 * AX_TRIAL_PAIRS, AX_TRIAL_WARMUP = 1 };
/* overlap must beat blocking by this fraction of a step: adjacent steps on a quiet host differ
 * by ~1-2%, and losing is worse than missing a gain of that size */
#define AX_TRIAL_MARGIN 0.02

typedef struct {
    ax_grid_t *g;
    ax_overlap *ov;
    int n; /* axes to time */
    ax_axis axes[AX_AXIS_COUNT];
    int cur;                     /* index into axes being timed (n: done) */
    int seen;                    /* timed steps of the current axis so far (0..11) */
    int warm;                    /* still in the warm-up step */
    int on_now;                  /* the schedule of the step being timed */
    double t[2][AX_TRIAL_PAIRS]; /* [off, on] step times of the current axis, by pair */
} ax_overlap_trial;

/* Which axes of ov's grid to time under `mode`, if `steps_left` covers the warm-up and twelve
 * steps an axis (else none: the rule's answer stands). Returns how many; tr->n. */
int ax_overlap_trial_init(ax_overlap_trial *tr, ax_grid_t *g, ax_overlap *ov, int mode,
                          long steps_left);
int ax_overlap_trial_active(const ax_overlap_trial *tr);
/* Before a step: sets the schedule of the axis being timed. No-op when not active. */
ax_status ax_overlap_trial_before(ax_overlap_trial *tr);
/* After the step, with this rank's wall time of it: collective over the world while active.
 * *settled = the axis just decided (its reason in ax_overlap_axis_why), or -1. */
ax_status ax_overlap_trial_after(ax_overlap_trial *tr, double dt, int *settled);
/* The choice from n pairs of adjacent steps, on[i] overlapped and off[i] blocking (pure): 1 =
 * overlap, when every on[i] < off[i] and the median of on[i] / off[i] is at most 1 - margin;
 * the reason, with that ratio, the count of faster pairs and both schedules' median step times,
 * in why[cap]. */
int ax_overlap_trial_pick(const double *on, const double *off, int n, double margin, char *why,
                          size_t cap);
