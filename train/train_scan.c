/* `axmem train --scan-every N --scan-config FILE`: training's scan hook (train/train_run.h) filled
 * with memscan's probe (memscan/probe_run.h). Only this layer sees both train/ and memscan/.
 *
 * FILE holds `axmem memscan probe` settings (`name = value` lines or a JSON object): samples,
 * prefix, suffix, offset, seed, batch, data (default: the training --data), index, tokenizer.
 * The checkpoint, grid, device and output are the run's own: naming them there is an error. Each
 * scan writes OUT/scans/step-NNNNNN/probe.json (+ probe.samples.jsonl, mode 0600) and its record
 * in metrics.jsonl. */
#include "lib/core/config.h"
#include "lib/core/fsutil.h"
#include "lib/core/log.h"
#include "lib/dist/comm.h"
#include "memscan/probe_run.h"
#include "train/train_run.h"
#include "train/train_scan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* settings the run decides: the scan probes the run's own checkpoint on its own ranks */
static const char *const run_owned[] = {"ckpt", "grid",        "device", "comm",
                                        "out",  "samples-out", "threads"};

static ax_status probe_prepare(void *ctx, const ax_train_config *cfg) {
    ax_ms_probe_opts *o = ctx;
    uint8_t *was_set = calloc((size_t)ax_ms_probe_table.n, 1);
    if (!was_set) return ax_errorf(AX_ERR_NOMEM, "out of memory");
    ax_status st = ax_cfg_set_defaults(&ax_ms_probe_table, o);
    if (st == AX_OK) st = ax_cfg_load_file(&ax_ms_probe_table, o, cfg->scan_config, was_set);
    if (st != AX_OK) { /* say which flag named the file, and what it should hold */
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", ax_error_msg());
        ax_error_clear();
        st = ax_errorf(st == AX_ERR_IO ? AX_ERR_ARG : st,
                       "--scan-config: %s (it holds `axmem memscan probe` settings: samples, "
                       "prefix, suffix, offset, seed, batch, data, index, tokenizer)",
                       msg);
    }
    for (size_t i = 0; st == AX_OK && i < sizeof run_owned / sizeof run_owned[0]; i++) {
        const ax_cfg_entry *e = ax_cfg_find(&ax_ms_probe_table, run_owned[i]);
        if (e && was_set[e - ax_ms_probe_table.entries])
            st = ax_errorf(AX_ERR_ARG,
                           "--scan-config %s sets '%s', which the run decides (the scan probes "
                           "the run's checkpoint on its grid and writes OUT/scans/); remove it",
                           cfg->scan_config, run_owned[i]);
    }
    free(was_set);
    if (st != AX_OK) return st;
    if (!o->data[0]) snprintf(o->data, sizeof o->data, "%s", cfg->data);
    const char *hint = "named by --scan-config; fix the path";
    AX_CHECK(ax_check_regular(o->data, hint));
    if (o->index[0]) AX_CHECK(ax_check_regular(o->index, hint));
    if (o->tokenizer[0]) AX_CHECK(ax_check_regular(o->tokenizer, hint));
    return AX_OK;
}

static ax_status probe_scan_run(void *ctx, const ax_train_scan_point *p, ax_jw *rec, double *rate,
                                double *lo, double *hi) {
    ax_ms_probe_opts o = *(const ax_ms_probe_opts *)ctx;
    ax_ms_probe_summary sum;
    char dir[AX_MS_PATH_MAX];
    if (snprintf(o.out, sizeof o.out, "%s/scans/step-%06ld/probe.json", p->out, p->step) >=
            (int)sizeof o.out ||
        snprintf(o.ckpt, sizeof o.ckpt, "%s", p->ckpt) >= (int)sizeof o.ckpt)
        return ax_errorf(AX_ERR_ARG, "--out %s is too long for the scan's paths; use a shorter one",
                         p->out);
    ax_dirname(o.out, dir, sizeof dir);
    snprintf(o.grid, sizeof o.grid, "%s", ax_grid_spec(p->grid));
    snprintf(o.device, sizeof o.device, "%s", p->device);
    snprintf(o.comm, sizeof o.comm, "%s", ax_comm_selected()); /* the run's --comm */
    o.samples_out[0] = 0;
    ax_status st = ax_grid_rank(p->grid) == 0 ? ax_mkdir_p(dir) : AX_OK;
    if (st == AX_OK) st = ax_ms_probe_run(&o, &sum);
    if (st != AX_OK || !sum.written) return st;
    ax_jw_key(rec, "exact_match"), ax_jw_num(rec, sum.exact_match.mean);
    ax_jw_key(rec, "exact_match_lo"), ax_jw_num(rec, sum.exact_match.lo);
    ax_jw_key(rec, "exact_match_hi"), ax_jw_num(rec, sum.exact_match.hi);
    ax_jw_key(rec, "token_accuracy"), ax_jw_num(rec, sum.token_accuracy.mean);
    ax_jw_key(rec, "rouge_l"), ax_jw_num(rec, sum.rouge_l.mean);
    ax_jw_key(rec, "samples"), ax_jw_int(rec, sum.samples);
    ax_jw_key(rec, "file"), ax_jw_str(rec, sum.scan);
    *rate = sum.exact_match.mean, *lo = sum.exact_match.lo, *hi = sum.exact_match.hi;
    AX_INFO("step %ld: probe exact match %.1f%% (95%% CI %.1f-%.1f%%), token accuracy %.3f; %s",
            p->step, 100 * sum.exact_match.mean, 100 * sum.exact_match.lo, 100 * sum.exact_match.hi,
            sum.token_accuracy.mean, sum.scan);
    return AX_OK;
}

ax_train_scan_hook ax_train_probe_hook(ax_ms_probe_opts *opts) {
    memset(opts, 0, sizeof *opts);
    return (ax_train_scan_hook){.name = "probe",
                                .rate_key = "exact_match",
                                .prepare = probe_prepare,
                                .scan = probe_scan_run,
                                .ctx = opts};
}
